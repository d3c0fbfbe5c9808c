/*
 * test_memindex.c - the memory index file (engine/memory/memindex.c,
 * format-spec/memindex.md): a store reopened from the file plus the records
 * after it has exactly the state (every field of every memory) and the
 * rankings of the live handle and of a full replay of the log; a damaged
 * file is set aside and the state rebuilt from the log, losing nothing;
 * a read-only handle reads the file but cannot write one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "boot.h"
#include "filehdr.h"
#include "io.h"
#include "memindex.h"
#include "memstate.h"
#include "seqfile.h"
#include "testutil.h"

/* Header fields (format-spec/memindex.md, "Header"). */
#define H_COVERED 16
#define H_BASE 24
#define H_NROWS 40
#define H_EXT_SUM 48
#define H_NNS 64
#define H_SHADOW 72
#define H_TCAP 96
#define H_UNSYNCED 192

#include <xxhash.h>

#define NQ 12

typedef struct fx {
    char *parent, *dir;
    cairn_db *db;
    cairn_mem *mem;
} fx;

static const char *const vocab[] = {
    "deploy", "database", "migration", "index", "prompt", "agent", "review", "tests",
    "latency", "cache", "schema", "rollback", "release", "branch", "merge", "token",
    "budget", "session", "error", "retry", "timeout", "parser", "memory", "vector",
};
#define NVOCAB (sizeof vocab / sizeof vocab[0])

static const char *const queries[NQ] = {
    "deploy database", "migration rollback", "agent prompt", "cache latency timeout",
    "index", "release branch merge", "token budget", "parser error", "unique needle",
    "memory vector", "nothing-matches-this", "session retry",
};

static void open_all(fx *f, int read_only)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    o.create = !read_only;
    o.read_only = read_only;
    o.durability = CAIRN_DURABILITY_NONE;
    o.segment_size = 64 * 1024; /* some records end up in sealed segments */
    if (cairn_open(&f->db, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    /* Relevance only: rankings do not move as recalls update access times. */
    mo.w_relevance = 1.0;
    assert_int_equal(cairn_mem_open(f->db, &mo, &f->mem), CAIRN_OK);
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
    f->parent = tu_mkdtemp("memindex");
    f->dir = tu_join(f->parent, "store");
    open_all(f, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    if (f->db != NULL)
        close_all(f);
    tu_rmrf(f->parent);
    free(f->parent);
    free(f->dir);
    free(f);
    return 0;
}

/* Names in dir of index files ("mem-" ... ext, 4 bytes). */
static size_t index_names(const char *dir, const char *ext)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t n_found = 0;
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        n_found += strncmp(de->d_name, "mem-", 4) == 0 && n > 4 && strcmp(de->d_name + n - 4, ext) == 0;
    }
    closedir(d);
    return n_found;
}

/* The index files in dir. */
static size_t index_files(const char *dir)
{
    return index_names(dir, ".cmx");
}

/* Temp files of index files in dir. */
static size_t index_temps(const char *dir)
{
    return index_names(dir, ".tmp");
}

/* The newest index file's name in dir (the top of the chain), or NULL. */
static char *index_file(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char best[64] = "";
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (strncmp(de->d_name, "mem-", 4) == 0 && n == 24 && strcmp(de->d_name + n - 4, ".cmx") == 0 &&
            strcmp(de->d_name, best) > 0)
            strcpy(best, de->d_name);
    }
    closedir(d);
    return best[0] ? tu_join(dir, best) : NULL;
}

/* A u64 of an index file's header. */
static uint64_t header_u64(const char *path, size_t at)
{
    size_t len = 0;
    uint8_t *b = tu_read_file(path, &len);
    uint64_t v;
    assert_non_null(b);
    assert_true(len >= at + 8);
    memcpy(&v, b + at, 8);
    free(b);
    return v;
}

static uint64_t rnd_state = 99;
static uint64_t rnd(void)
{
    return tu_splitmix64(&rnd_state);
}

static void store_some(fx *f, int from, int to, char ids[][CAIRN_MEM_ID_MAX + 1])
{
    for (int i = from; i < to; i++) {
        char text[400];
        int n = 4 + (int)(rnd() % 20), len;
        cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
        cairn_memory *m = NULL;
        len = snprintf(text, sizeof text, "memory %d:", i);
        for (int j = 0; j < n; j++)
            len += snprintf(text + len, sizeof text - (size_t)len, " %s", vocab[rnd() % NVOCAB]);
        if (i == 77)
            snprintf(text + len, sizeof text - (size_t)len, " unique needle");
        so.ns = i % 3 == 0 ? "work" : i % 10 == 1 ? "tmp" : "";
        so.category = i % 4 == 0 ? "decision" : "fact";
        so.importance = (double)(i % 10) / 10.0;
        so.metadata = i % 5 == 0 ? "{\"source\":\"test\",\"n\":1}" : NULL;
        assert_int_equal(cairn_mem_store(f->mem, text, &so, &m, NULL), CAIRN_OK);
        strcpy(ids[i], m->id);
        cairn_mem_free(m);
    }
}

/* Every field of every memory, as JSON. */
static char *export_all(fx *f)
{
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(cairn_mem_export(f->mem, CAIRN_MEM_JSON, &out, &len), CAIRN_OK);
    return out;
}

/* The export is want, byte for byte. */
static void export_is(fx *f, const char *want)
{
    char *got = export_all(f);
    assert_string_equal(got, want);
    free(got);
}

typedef struct ranking {
    char id[20][CAIRN_MEM_ID_MAX + 1];
    double bm25[20];
    size_t n;
} ranking;

static void rank_all(fx *f, const char *const *nss, size_t n_ns, ranking *r)
{
    for (int q = 0; q < NQ; q++) {
        cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
        cairn_recall_hit *h = NULL;
        size_t n = 0;
        ro.k = 20;
        ro.ns = nss;
        ro.n_ns = n_ns;
        assert_int_equal(cairn_mem_recall(f->mem, queries[q], &ro, &h, &n), CAIRN_OK);
        r[q].n = n;
        for (size_t i = 0; i < n; i++) {
            strcpy(r[q].id[i], h[i].mem.id);
            r[q].bm25[i] = h[i].bm25;
        }
        cairn_recall_free(h, n);
    }
}

static void same_rankings(const ranking *a, const ranking *b)
{
    for (int q = 0; q < NQ; q++) {
        assert_int_equal(a[q].n, b[q].n);
        for (size_t i = 0; i < a[q].n; i++) {
            if (strcmp(a[q].id[i], b[q].id[i]) != 0 || fabs(a[q].bm25[i] - b[q].bm25[i]) > 1e-9)
                fail_msg("query '%s' rank %zu: %s %.12f vs %s %.12f", queries[q], i, a[q].id[i],
                         a[q].bm25[i], b[q].id[i], b[q].bm25[i]);
        }
    }
}

/* Stores, deletes, updates and a clear before the file and after it. */
static void build_history(fx *f, char ids[][CAIRN_MEM_ID_MAX + 1])
{
    cairn_mem_stats st;
    cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;

    store_some(f, 0, 600, ids);
    for (int i = 0; i < 600; i += 7)
        if (i != 77)
            assert_int_equal(cairn_mem_delete(f->mem, ids[i], "test"), CAIRN_OK);
    u.importance = 0.95;
    u.metadata = "{\"updated\":true}";
    for (int i = 2; i < 600; i += 11)
        if (i % 7 != 0)
            assert_int_equal(cairn_mem_update(f->mem, ids[i], &u), CAIRN_OK);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_rows, st.total);
    assert_true(st.index_bytes > 0);
    assert_int_equal(st.unindexed, 0);
    cairn_mem_stats_free(&st);
    /* after the file: new memories, and old ones deleted, updated, cleared */
    store_some(f, 600, 700, ids);
    for (int i = 3; i < 600; i += 50)
        if (i % 7 != 0)
            assert_int_equal(cairn_mem_delete(f->mem, ids[i], "after"), CAIRN_OK);
    u.importance = 0.05;
    u.metadata = NULL;
    u.category = "lesson";
    for (int i = 5; i < 600; i += 60)
        if (i % 7 != 0)
            assert_int_equal(cairn_mem_update(f->mem, ids[i], &u), CAIRN_OK);
    assert_int_equal(cairn_mem_clear(f->mem, "tmp"), CAIRN_OK);
}

static void reopened_from_the_file_equals_the_live_state_and_a_full_replay(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    static ranking live[NQ], from_file[NQ], replayed[NQ];
    const char *nss[] = {"", "work"};
    char *e_live, *e_file, *e_file_after, *e_replay, *path;
    cairn_mem_stats st;

    build_history(f, ids);
    rank_all(f, nss, 2, live);
    e_live = export_all(f); /* with the access records of those recalls */
    assert_true(live[8].n == 1); /* "unique needle": one memory, in the file */
    close_all(f);

    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_true(st.index_rows > 300);
    assert_true(st.unindexed > 100 && st.unindexed < 400); /* only the tail was replayed */
    assert_string_equal(st.index_note, "");
    cairn_mem_stats_free(&st);
    e_file = export_all(f);
    assert_string_equal(e_file, e_live);
    rank_all(f, nss, 2, from_file);
    same_rankings(live, from_file);
    e_file_after = export_all(f); /* with this handle's access records */
    close_all(f);

    path = index_file(f->dir);
    assert_non_null(path);
    assert_int_equal(remove(path), 0);
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_rows, 0);
    cairn_mem_stats_free(&st);
    e_replay = export_all(f);
    assert_string_equal(e_replay, e_file_after);
    rank_all(f, nss, 2, replayed);
    same_rankings(live, replayed);
    free(path);
    free(e_live);
    free(e_file);
    free(e_file_after);
    free(e_replay);
}

static void flip_byte(const char *path, size_t at)
{
    size_t len = 0;
    uint8_t *b = tu_read_file(path, &len);
    assert_non_null(b);
    assert_true(at < len);
    b[at] ^= 0x20;
    assert_int_equal(tu_write_file(path, b, len), 0);
    free(b);
}

/* Where the n bytes at s first are in the file at path; SIZE_MAX: not in it. */
static size_t offset_in_file(const char *path, const void *s, size_t n)
{
    size_t len = 0, at = SIZE_MAX;
    uint8_t *b = tu_read_file(path, &len);
    assert_non_null(b);
    for (size_t i = 0; i + n <= len && at == SIZE_MAX; i++)
        if (memcmp(b + i, s, n) == 0)
            at = i;
    free(b);
    return at;
}

static size_t find_bytes_in_file(const char *path, const void *s, size_t n, const char *what)
{
    size_t at = offset_in_file(path, s, n);
    if (at == SIZE_MAX)
        fail_msg("'%s' not in %s", what, path);
    return at;
}

static uint32_t get32le(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Where a memory's id is in an index file: an id cairn made ("m" and 16
 * lowercase hex digits) as its digits' value, u64 little-endian
 * (format-spec/memindex.md, "Rows"); any other as its text. */
static size_t find_id_in_file(const char *path, const char *id)
{
    uint8_t v[8];
    uint64_t x = 0;
    size_t n = strlen(id);
    if (n != 17 || id[0] != 'm' || strspn(id + 1, "0123456789abcdef") != 16)
        return find_bytes_in_file(path, id, n, id);
    for (int i = 1; i < 17; i++)
        x = x << 4 | (uint64_t)(id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
    for (int i = 0; i < 8; i++)
        v[i] = (uint8_t)(x >> (8 * i));
    return find_bytes_in_file(path, v, 8, id);
}

static void a_damaged_file_is_set_aside_and_nothing_is_lost(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char *e_before, *e, *path;
    cairn_mem_stats st;
    cairn_memory *m = NULL;

    build_history(f, ids);
    e_before = export_all(f);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    close_all(f);

    /* 1. the header: refused at open, rebuilt from the log */
    path = index_file(f->dir);
    flip_byte(path, 20);
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_rows, 0);
    assert_non_null(strstr(st.index_note, "rebuilt from the log"));
    cairn_mem_stats_free(&st);
    e = export_all(f);
    assert_string_equal(e, e_before);
    free(e);
    assert_int_equal(access(path, F_OK), -1); /* the writer removed it */
    free(path);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    close_all(f);

    /* 2. one memory's row strings (its id; the content is in the log
     * alone): found when that row is first read */
    path = index_file(f->dir);
    assert_non_null(path);
    flip_byte(path, find_id_in_file(path, ids[77]) + 2);
    open_all(f, 0);
    assert_int_equal(cairn_mem_get(f->mem, ids[77], &m), CAIRN_ECORRUPT);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "damaged"));
    assert_null(m);
    close_all(f);
    assert_null(index_file(f->dir));
    open_all(f, 0);
    assert_int_equal(cairn_mem_get(f->mem, ids[77], &m), CAIRN_OK);
    assert_non_null(strstr(m->content, "unique needle"));
    cairn_mem_free(m);
    e = export_all(f);
    assert_string_equal(e, e_before);
    free(e);
    free(path);
    free(e_before);
}

/* The ids of the memories recall finds for query (at most 4), in order. */
static size_t recall_ids(fx *f, const char *query, char ids[4][CAIRN_MEM_ID_MAX + 1])
{
    cairn_recall_opts o = CAIRN_RECALL_OPTS_INIT;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    o.k = 4;
    assert_int_equal(cairn_mem_recall(f->mem, query, &o, &h, &n), CAIRN_OK);
    for (size_t i = 0; i < n; i++)
        strcpy(ids[i], h[i].mem.id);
    cairn_recall_free(h, n);
    return n;
}

/* A file of an older format version (3 and before: not bound to its log;
 * 2 and before: terms of tokenizer rules 1, `don't` one word) is not used:
 * the state is rebuilt from the log (rules 2: `don` + `t`), and the
 * writer's close replaces the file, even in a store too small for close to
 * checkpoint otherwise. */
static void a_file_of_an_older_version_is_rebuilt_from_the_log(void **state)
{
    fx *f = *state;
    static const char *const texts[] = {"deploy on tuesday", "the cache timed out",
                                        "rollback the migration", "review the parser",
                                        "token budget per session"};
    char got[4][CAIRN_MEM_ID_MAX + 1], *path;
    cairn_memory *m = NULL;
    cairn_mem_stats st;
    uint8_t *b;
    size_t len = 0;

    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        assert_int_equal(cairn_mem_store(f->mem, texts[i], NULL, NULL, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_store(f->mem, "don't deploy on fridays", NULL, &m, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    close_all(f);
    /* The header as a version 3 writer made it (its sum at 120). */
    path = index_file(f->dir);
    assert_non_null(path);
    b = tu_read_file(path, &len);
    assert_true(len > MX_HEAD_LEN && b[8] == 10);
    b[8] = 3;
    b[10] = 0; /* a u32 version at 8, no common header */
    {
        uint64_t sum = XXH3_64bits(b, 120);
        for (int i = 0; i < 8; i++)
            b[120 + i] = (uint8_t)(sum >> (8 * i));
    }
    assert_int_equal(tu_write_file(path, b, len), 0);
    free(b);

    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_rows, 0);
    assert_non_null(strstr(st.index_note, "not bound to a log"));
    assert_non_null(strstr(st.index_note, "rebuilt from the log"));
    cairn_mem_stats_free(&st);
    assert_int_equal(recall_ids(f, "don", got), 1); /* rules 1 terms have no "don" */
    assert_string_equal(got[0], m->id);
    close_all(f); /* six memories: only the outdated file makes close write one */

    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_rows, 6);
    assert_string_equal(st.index_note, "");
    cairn_mem_stats_free(&st);
    assert_int_equal(recall_ids(f, "don", got), 1);
    assert_string_equal(got[0], m->id);
    cairn_mem_free(m);
    free(path);
}

static void a_read_only_handle_reads_the_file_and_cannot_write_one(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    cairn_mem_stats st;
    cairn_memory *m = NULL;

    build_history(f, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    close_all(f);
    open_all(f, 1);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_true(st.index_rows > 300);
    assert_int_equal(st.unindexed, 0);
    cairn_mem_stats_free(&st);
    assert_int_equal(cairn_mem_get(f->mem, ids[77], &m), CAIRN_OK);
    cairn_mem_free(m);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_EPERM);
    close_all(f);
}


/* Two handles on one store: each folds the other's records before its own,
 * so an index file written by either covers every memory up to its seq. */
static void two_handles_on_one_store_lose_nothing_to_the_file(void **state)
{
    fx *f = *state;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    cairn_mem *b = NULL;
    cairn_memory *m1 = NULL, *m2 = NULL, *got = NULL;
    char id1[CAIRN_MEM_ID_MAX + 1], id2[CAIRN_MEM_ID_MAX + 1];

    mo.w_relevance = 1.0;
    assert_int_equal(cairn_mem_open(f->db, &mo, &b), CAIRN_OK);
    assert_int_equal(cairn_mem_store(b, "stored through the second handle", NULL, &m1, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_store(f->mem, "stored through the first handle", NULL, &m2, NULL),
                     CAIRN_OK);
    strcpy(id1, m1->id);
    strcpy(id2, m2->id);
    cairn_mem_free(m1);
    cairn_mem_free(m2);
    /* the first handle folded the second's memory before its own */
    assert_int_equal(cairn_mem_get(f->mem, id1, &got), CAIRN_OK);
    cairn_mem_free(got);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    cairn_mem_close(b);
    close_all(f);
    open_all(f, 0);
    assert_int_equal(cairn_mem_get(f->mem, id1, &got), CAIRN_OK);
    cairn_mem_free(got);
    assert_int_equal(cairn_mem_get(f->mem, id2, &got), CAIRN_OK);
    cairn_mem_free(got);
}

/* A damaged term record is not carried into the next file: writing one
 * fails, names the file, removes it; a reopen rebuilds everything. */
static void a_damaged_term_is_not_written_on(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char *want, *path, *e;
    size_t len = 0;
    uint8_t *b;
    uint64_t tix_off, nterms, nsingle, nrows;
    uint32_t bad = 0x7fffffff;

    build_history(f, ids);
    want = export_all(f);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    close_all(f);
    path = index_file(f->dir);
    nrows = header_u64(path, H_NROWS);
    b = tu_read_file(path, &len);
    /* namespace 0's text image; its last term record's "off" field (the
     * last: a merge meets no sound term after it), a single record after
     * the nterms - nsingle full ones */
    memcpy(&tix_off, b + MX_HEAD_LEN + 24, 8);
    memcpy(&nterms, b + tix_off + 16, 8);
    memcpy(&nsingle, b + tix_off + 64, 8);
    assert_true(nsingle > 0 && nsingle < nterms);
    memcpy(b + tix_off + 80 + (nterms - nsingle) * 40 + (nsingle - 1) * 16, &bad, 4);
    assert_int_equal(tu_write_file(path, b, len), 0);
    free(b);
    open_all(f, 0);
    /* as many new memories as the file holds rows: the next file merges it */
    for (uint64_t i = 0; i < nrows; i++) {
        char text[64];
        cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
        so.ns = "tmp2";
        snprintf(text, sizeof text, "merge fodder %" PRIu64, i);
        assert_int_equal(cairn_mem_store(f->mem, text, &so, NULL, NULL), CAIRN_OK);
    }
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_ECORRUPT);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "damaged"));
    close_all(f);
    assert_null(index_file(f->dir));
    open_all(f, 0);
    assert_int_equal(cairn_mem_clear(f->mem, "tmp2"), CAIRN_OK);
    e = export_all(f);
    assert_string_equal(e, want);
    free(e);
    free(want);
    free(path);
}

/* A file whose namespace count lies (sums recomputed, so it passes the
 * open checks): the maxMemories prune counts the memories themselves. */
static void a_lying_live_count_cannot_overflow_the_prune(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "", *path;
    size_t len = 0;
    uint8_t *b;
    uint32_t n_ns;
    uint64_t five = 5, sum;
    cairn_mem_stats st;

    rnd_state = 11;
    store_some(f, 0, 30, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    close_all(f);
    path = index_file(f->dir);
    b = tu_read_file(path, &len);
    memcpy(&n_ns, b + H_NNS, 4);
    for (uint32_t i = 0; i < n_ns; i++) {
        uint64_t tix, ndocs, lie;
        memcpy(&tix, b + MX_HEAD_LEN + 64 * i + 24, 8);
        memcpy(&ndocs, b + tix + 8, 8);
        lie = ndocs < five ? ndocs : five;
        memcpy(b + MX_HEAD_LEN + 64 * i + 16, &lie, 8);
        /* and the text image's own count, which the open compares it with */
        memcpy(b + tix + 48, &lie, 8);
        sum = XXH3_64bits(b + tix, 72);
        memcpy(b + tix + 72, &sum, 8);
    }
    sum = XXH3_64bits(b + MX_HEAD_LEN, 64 * (size_t)n_ns);
    memcpy(b + MX_NS_SUM, &sum, 8);
    sum = XXH3_64bits(b + FILEHDR_SIZE, MX_HEAD_LEN - FILEHDR_SIZE);
    memcpy(b + H_EXT_SUM, &sum, 8);
    sum = XXH3_64bits(b, FILEHDR_OFF_SUM);
    memcpy(b + FILEHDR_OFF_SUM, &sum, 8);
    assert_int_equal(tu_write_file(path, b, len), 0);
    assert_int_equal(tu_relist(f->dir), 0); /* the forged file is the listed one */
    free(b);
    free(path);
    o.durability = CAIRN_DURABILITY_NONE;
    assert_int_equal(cairn_open(&f->db, f->dir, &o, err, sizeof err), CAIRN_OK);
    mo.w_relevance = 1.0;
    mo.max_memories = 4;
    assert_int_equal(cairn_mem_open(f->db, &mo, &f->mem), CAIRN_OK);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_true(st.index_rows > 0); /* the lie passed the open checks */
    cairn_mem_stats_free(&st);
    assert_int_equal(cairn_mem_store(f->mem, "one more deploy note", NULL, NULL, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    /* 30 memories: 10 in work, 2 in tmp, 18 in the default namespace, which
     * the new one takes past the limit: 4 stay there */
    assert_int_equal(st.total, 10 + 2 + 4);
    cairn_mem_stats_free(&st);
    /* and verify names the lie */
    {
        uint64_t problems = 0;
        int checked = 0;
        assert_int_equal(cairn_mem_verify_index(f->db, NULL, NULL, &problems, &checked), CAIRN_OK);
        assert_int_equal(checked, 1);
        assert_int_equal(problems, 1);
    }
}

/* ---- threads ------------------------------------------------------------- */

typedef struct worker {
    fx *f;
    int id, n, stored, recalled, failed;
    int *finished; /* atomic: workers done */
} worker;

static void *store_and_recall(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < w->n; i++) {
        char text[96];
        cairn_recall_hit *h = NULL;
        size_t nh = 0;
        snprintf(text, sizeof text, "thread %d note %d about the deploy pipeline", w->id, i);
        if (cairn_mem_store(w->f->mem, text, NULL, NULL, NULL) == CAIRN_OK)
            w->stored++;
        else
            w->failed++;
        if (cairn_mem_recall(w->f->mem, "deploy pipeline", NULL, &h, &nh) == CAIRN_OK) {
            w->recalled += nh > 0;
            cairn_recall_free(h, nh);
        } else {
            w->failed++;
        }
    }
    __atomic_add_fetch(w->finished, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Checkpoints while two threads store and recall: every call succeeds, and
 * the reopened store has every memory (TSan runs this too). */
static void checkpoints_while_threads_store_and_recall(void **state)
{
    fx *f = *state;
    pthread_t th[2];
    worker w[2];
    cairn_mem_stats st;
    int finished = 0, checkpoints = 0;

    for (int i = 0; i < 2; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].f = f;
        w[i].id = i;
        w[i].n = 150;
        w[i].finished = &finished;
        assert_int_equal(pthread_create(&th[i], NULL, store_and_recall, &w[i]), 0);
    }
    /* checkpoint for as long as they run */
    do {
        assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
        checkpoints++;
    } while (__atomic_load_n(&finished, __ATOMIC_SEQ_CST) < 2);
    assert_true(checkpoints >= 1);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(w[i].failed, 0);
        assert_int_equal(w[i].stored, 150);
        assert_int_equal(w[i].recalled, 150);
    }
    close_all(f);
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.total, 300);
    cairn_mem_stats_free(&st);
}

/* ---- a failing disk while the file is written --------------------------- */

/* Fails call number `fail_at` (counting only calls at memindex.* sites,
 * and at manifest.* sites: the MANIFEST that lists a new file) with EIO;
 * counts them otherwise. */
static struct {
    int calls, fail_at, failed, err;
} inj;

static int hit(const char *site)
{
    if ((strncmp(site, "memindex.", 9) != 0 && strncmp(site, "manifest.", 9) != 0) ||
        strcmp(site, "memindex.close") == 0 || strcmp(site, "manifest.close") == 0)
        return 0;
    if (++inj.calls == inj.fail_at) {
        inj.failed = 1;
        errno = inj.err ? inj.err : EIO;
        return 1;
    }
    return 0;
}
static int f_open(void *u, const char *site, const char *path, int flags, int mode)
{
    return hit(site) ? -1 : cairn_io_default()->open(u, site, path, flags, mode);
}
static int f_openat(void *u, const char *site, int dirfd, const char *path, int flags, int mode)
{
    return hit(site) ? -1 : cairn_io_default()->openat(u, site, dirfd, path, flags, mode);
}
static int f_close(void *u, const char *site, int fd)
{
    return cairn_io_default()->close(u, site, fd);
}
static ssize_t f_pread(void *u, const char *site, int fd, void *buf, size_t len, off_t off)
{
    return hit(site) ? -1 : cairn_io_default()->pread(u, site, fd, buf, len, off);
}
static ssize_t f_pwrite(void *u, const char *site, int fd, const void *buf, size_t len, off_t off)
{
    return hit(site) ? -1 : cairn_io_default()->pwrite(u, site, fd, buf, len, off);
}
static int f_fsync(void *u, const char *site, int fd)
{
    return hit(site) ? -1 : cairn_io_default()->fsync(u, site, fd);
}
static int f_fdatasync(void *u, const char *site, int fd)
{
    return hit(site) ? -1 : cairn_io_default()->fdatasync(u, site, fd);
}
static int f_ftruncate(void *u, const char *site, int fd, off_t len)
{
    return hit(site) ? -1 : cairn_io_default()->ftruncate(u, site, fd, len);
}
static int f_renameat(void *u, const char *site, int dirfd, const char *from, const char *to)
{
    return hit(site) ? -1 : cairn_io_default()->renameat(u, site, dirfd, from, to);
}
static int f_unlinkat(void *u, const char *site, int dirfd, const char *path)
{
    return hit(site) ? -1 : cairn_io_default()->unlinkat(u, site, dirfd, path);
}
static const cairn_io faulty = {f_open, f_openat, f_close, f_pread, f_pwrite, f_fsync,
                                f_fdatasync, f_ftruncate, f_renameat, f_unlinkat, NULL,
                                NULL}; /* reserve: none (not used by index files) */

/* Every I/O call of writing the file fails in turn (EIO; ENOSPC for one
 * variant): the checkpoint reports it (or, for the cleanup after the
 * rename, succeeds), the handle's state is what it was, and a reopen
 * without faults has every memory. Variants: the first file of a store; a
 * generation on a whole file (deletes and updates of its memories); a
 * merge of the two into one whole file; the generation again on a full
 * disk. */
static void failing_disk_variant(fx *f, int variant);

/* A fresh store in f->dir, opened on the faulty io table with no call
 * failing yet, without background threads: the I/O calls of a checkpoint
 * or a close come in order, with no merger's among them. */
static void open_faulty(fx *f)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    tu_rmrf(f->dir);
    o.create = 1;
    o.durability = CAIRN_DURABILITY_NONE;
    o.io = &faulty;
    o.background = 0;
    mo.w_relevance = 1.0;
    inj.calls = 0;
    inj.fail_at = 0;
    inj.failed = 0;
    if (cairn_open(&f->db, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(f->db, &mo, &f->mem), CAIRN_OK);
}

static void a_failing_disk_while_writing_the_file_loses_nothing(void **state)
{
    fx *f = *state;
    for (int variant = 0; variant < 4; variant++)
        failing_disk_variant(f, variant);
    open_all(f, 0);
}

static void failing_disk_variant(fx *f, int variant)
{
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
    char *want;
    int calls;

    if (f->mem != NULL)
        close_all(f);
    for (int n = 0;; n++) {
        char *tmp;
        int rc;

        open_faulty(f);
        rnd_state = 5;
        store_some(f, 0, 40, ids);
        if (variant > 0) { /* a whole file first, then what changes it */
            store_some(f, 40, 140, ids);
            assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
            store_some(f, 140, variant == 2 ? 240 : 160, ids);
            for (int i = 3; i < 140; i += 29)
                assert_int_equal(cairn_mem_delete(f->mem, ids[i], "gone"), CAIRN_OK);
            u.importance = 0.125;
            for (int i = 5; i < 140; i += 41)
                assert_int_equal(cairn_mem_update(f->mem, ids[i], &u), CAIRN_OK);
        }
        inj.err = variant == 3 ? ENOSPC : EIO;
        want = export_all(f);
        inj.calls = 0;
        inj.fail_at = n;
        rc = cairn_mem_checkpoint(f->mem);
        calls = inj.calls;
        if (inj.failed && rc == CAIRN_OK) {
            /* only the removal of older files may fail quietly */
            char *p = index_file(f->dir);
            assert_non_null(p);
            free(p);
        }
        if (inj.failed && rc != CAIRN_OK) {
            assert_true(rc == (variant == 3 ? CAIRN_EFULL : CAIRN_EIO));
            assert_true(strlen(cairn_mem_errmsg(f->mem)) > 0);
        }
        export_is(f, want);
        cairn_mem_close(f->mem);
        f->mem = NULL;
        assert_int_equal(cairn_close(f->db), CAIRN_OK);
        f->db = NULL;
        tmp = tu_find_last(f->dir, ".tmp");
        if (tmp != NULL && rc != CAIRN_OK && inj.failed) {
            /* a temp file left by a failed unlink is harmless: never read */
            free(tmp);
        } else {
            assert_null(tmp);
        }
        open_all(f, 0);
        export_is(f, want);
        free(want);
        close_all(f);
        if (n > 0 && !inj.failed)
            break; /* past the last call */
        if (n == 0)
            assert_true(calls >= 6); /* create, writes, fsync, rename, dirsync, open */
    }
}

static void store_plain(fx *f, int from, int to);

/* Every I/O call of a close's file (written without its fsync: "Files
 * written without a sync") fails in turn, with EIO and with ENOSPC: the
 * close still returns, leaves no temp file (but one a failed unlink
 * left), and a reopen without faults has every memory; once no call
 * fails, the close's file is there, naming this boot. */
static void a_failing_disk_during_a_close_loses_nothing(void **state)
{
    fx *f = *state;
    int done = 0;

    close_all(f);
    for (int n = 1; !done; n++)
        for (int e = 0; e < 2; e++) {
            char *want, *tmp, *top;
            int failed;

            open_faulty(f);
            store_plain(f, 0, 1200); /* past MEM_CHECKPOINT_MIN: the close writes a file */
            assert_int_equal(cairn_sync(f->db), CAIRN_OK);
            want = export_all(f);
            inj.err = e ? ENOSPC : EIO;
            inj.calls = 0;
            inj.fail_at = n;
            cairn_mem_close(f->mem);
            f->mem = NULL;
            failed = inj.failed;
            inj.fail_at = 0;
            assert_int_equal(cairn_close(f->db), CAIRN_OK);
            f->db = NULL;
            tmp = tu_find_last(f->dir, ".tmp");
            if (tmp != NULL && failed) /* a failed unlink's: never read */
                free(tmp);
            else
                assert_null(tmp);
            top = index_file(f->dir);
            if (!failed) {
                assert_non_null(top);
                assert_int_equal(header_u64(top, H_UNSYNCED), cairn__boot_id());
                done = 1;
            }
            free(top);
            open_all(f, 0);
            export_is(f, want);
            free(want);
            close_all(f);
        }
    open_all(f, 0);
}

static const char victim_bytes[] = "a file outside the store that must keep its bytes\n";

static void victim_unchanged(const char *path)
{
    size_t len = 0;
    uint8_t *b = tu_read_file(path, &len);
    assert_non_null(b);
    if (len != sizeof victim_bytes - 1 || memcmp(b, victim_bytes, len) != 0)
        fail_msg("%s was written through a symlink (%zu bytes now)", path, len);
    free(b);
}

/* Symlinks planted under the index file's names: a checkpoint replaces a
 * symlinked temp (mem-<seq>.cmx.tmp) instead of writing through it, and
 * what it renames into place is a regular file; a symlinked index file is
 * not read: the state is rebuilt from the log, and the writer removes the
 * link, never the file it names. */
static void a_planted_symlink_is_neither_written_through_nor_read(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char name[64], *tmp, *victim, *moved, *path, *e_before, *e;
    cairn_mem_stats ms;
    cairn_stats st;
    struct stat sb;
    long long size;

    rnd_state = 11;
    store_some(f, 0, 60, ids);
    e_before = export_all(f);
    assert_int_equal(cairn_stats_get(f->db, &st), CAIRN_OK);
    snprintf(name, sizeof name, "mem-%016llx.cmx.tmp", (unsigned long long)st.last_seq);
    victim = tu_join(f->parent, "victim");
    assert_int_equal(tu_write_file(victim, victim_bytes, sizeof victim_bytes - 1), 0);
    tmp = tu_join(f->dir, name);
    assert_int_equal(symlink(victim, tmp), 0);

    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    victim_unchanged(victim);
    path = index_file(f->dir);
    assert_non_null(path);
    assert_int_equal(lstat(path, &sb), 0);
    if (!S_ISREG(sb.st_mode))
        fail_msg("%s is not a regular file after the checkpoint", path);
    assert_int_equal(lstat(tmp, &sb), -1); /* renamed into place */
    close_all(f);

    /* The index file itself a symlink (to the real file, moved out). */
    moved = tu_join(f->parent, "moved.cmx");
    assert_int_equal(rename(path, moved), 0);
    assert_int_equal(symlink(moved, path), 0);
    size = tu_file_size(moved);
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &ms), CAIRN_OK);
    assert_int_equal(ms.index_rows, 0);
    if (strstr(ms.index_note, "is a symlink; refusing to follow it") == NULL)
        fail_msg("index note \"%s\" does not say the file is a symlink", ms.index_note);
    cairn_mem_stats_free(&ms);
    e = export_all(f);
    assert_string_equal(e, e_before);
    free(e);
    assert_int_equal(lstat(path, &sb), -1); /* the writer removed the link */
    assert_int_equal(tu_file_size(moved), size);
    close_all(f);
    open_all(f, 0);

    free(tmp);
    free(victim);
    free(moved);
    free(path);
    free(e_before);
}

/* The child's I/O table: the process dies (as with kill -9) the moment the
 * checkpoint would rename its finished temp file into place. */
static int die_at_rename(void *u, const char *site, int dirfd, const char *from, const char *to)
{
    if (strcmp(site, "memindex.rename") == 0)
        _exit(0);
    return cairn_io_default()->renameat(u, site, dirfd, from, to);
}

typedef struct temp_note {
    char name[64];
    uint64_t bytes;
    int n, in_flight;
} temp_note;

static void note_temp(void *user, const char *file, uint64_t bytes, int in_flight)
{
    temp_note *t = user;
    snprintf(t->name, sizeof t->name, "%s", file);
    t->bytes = bytes;
    t->in_flight = in_flight;
    t->n++;
}

/* A process killed during a checkpoint leaves its mem-<seq>.cmx.tmp, as
 * large as the index: listed (with its size) until the next writer open,
 * which removes it; nothing is lost. */
static void a_checkpoint_killed_midway_leaves_a_temp_the_next_writer_open_removes(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char *want, *tmp;
    temp_note t;
    uint64_t count = 0;
    pid_t pid;
    int st;

    rnd_state = 3;
    store_some(f, 0, 80, ids);
    want = export_all(f);
    close_all(f);

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cairn_io io = *cairn_io_default();
        cairn_options o = CAIRN_OPTIONS_INIT;
        cairn_db *db = NULL;
        cairn_mem *mem = NULL;
        io.renameat = die_at_rename;
        o.io = &io;
        o.background = 0;
        if (cairn_open(&db, f->dir, &o, NULL, 0) != CAIRN_OK ||
            cairn_mem_open(db, NULL, &mem) != CAIRN_OK)
            _exit(2);
        (void)cairn_mem_checkpoint(mem);
        _exit(3); /* the rename was never reached */
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);

    tmp = tu_find_last(f->dir, ".tmp");
    assert_non_null(tmp);
    open_all(f, 1);
    memset(&t, 0, sizeof t);
    assert_int_equal(cairn_temp_files(f->db, note_temp, &t, &count), CAIRN_OK);
    assert_int_equal(count, 1);
    assert_int_equal(t.n, 1);
    assert_non_null(strstr(tmp, t.name));
    assert_int_equal(strncmp(t.name, "mem-", 4), 0);
    assert_int_equal(t.bytes, (uint64_t)tu_file_size(tmp));
    assert_true(t.bytes > 1000);
    assert_int_equal(t.in_flight, 0);
    close_all(f);

    open_all(f, 0);
    assert_int_equal(tu_file_size(tmp), -1); /* removed */
    assert_int_equal(cairn_temp_files(f->db, NULL, NULL, &count), CAIRN_OK);
    assert_int_equal(count, 0);
    export_is(f, want);
    free(want);
    free(tmp);
}

static void store_plain(fx *f, int from, int to)
{
    for (int i = from; i < to; i++) {
        char text[64];
        snprintf(text, sizeof text, "plain fact number %d", i);
        assert_int_equal(cairn_mem_store(f->mem, text, NULL, NULL, NULL), CAIRN_OK);
    }
}

/* A memory's importance as a get reads it. */
static double importance_of(fx *f, const char *id)
{
    cairn_memory *m = NULL;
    double v;
    assert_int_equal(cairn_mem_get(f->mem, id, &m), CAIRN_OK);
    v = m->importance;
    cairn_mem_free(m);
    return v;
}

/* A close writes what changed since the files in use, as a generation on
 * them (format-spec/memindex.md, "Generations"), once 1,000 memory
 * records are left out: never the whole index of a growing store. */
static void a_close_writes_a_generation_of_what_changed(void **state)
{
    fx *f = *state;
    char *first, *now;
    cairn_mem_stats st;

    store_plain(f, 0, 5000);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    first = index_file(f->dir);
    assert_non_null(first);
    assert_int_equal(header_u64(first, H_BASE), 0); /* a whole file */
    assert_int_equal(header_u64(first, H_NROWS), 5000);
    store_plain(f, 5000, 6000);
    close_all(f);
    now = index_file(f->dir);
    assert_string_not_equal(now, first);
    assert_int_equal(access(first, F_OK), 0);        /* the whole file stays */
    assert_int_equal(header_u64(now, H_BASE), header_u64(first, H_COVERED)); /* on it */
    assert_int_equal(header_u64(now, H_NROWS), 1000);     /* the new memories only */
    assert_int_equal(index_files(f->dir), 2);
    free(now);
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 2);
    assert_int_equal(st.index_rows, 6000);
    assert_int_equal(st.unindexed, 0);
    assert_int_equal(st.total, 6000);
    cairn_mem_stats_free(&st);
    store_plain(f, 6000, 6300); /* fewer than 1,000 records: nothing written */
    close_all(f);
    assert_int_equal(index_files(f->dir), 2);
    open_all(f, 0);
    assert_int_equal(cairn_mem_skipped(f->mem), 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.total, 6300);
    assert_int_equal(st.unindexed, 300);
    cairn_mem_stats_free(&st);
    free(first);
}


/* Checkpoints after rounds of stores, deletes, updates, recalls, restores
 * and a clear: the chain of files grows and merges (format-spec/
 * memindex.md, "Generations"), and always answers as the live state did and
 * as a replay of the whole log does, scores included. */
static void generations_answer_as_the_live_state_and_a_full_replay(void **state)
{
    fx *f = *state;
    static char ids[3000][CAIRN_MEM_ID_MAX + 1];
    static ranking live[NQ], from_chain[NQ], replayed[NQ];
    const char *nss[] = {"", "work"};
    cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
    char *e_live, *e_chain, *e_after, *e_replay;
    size_t most = 0, files = 0, merges = 0, restored = 0;
    int n = 0;
    cairn_mem_stats st;

    rnd_state = 21;
    for (int round = 0; round < 16; round++) {
        int add = round == 0 ? 600 : 40 + (int)(rnd() % 160);
        size_t now;
        store_some(f, n, n + add, ids);
        n += add;
        for (int k = 0; k < 12; k++) { /* memories of the files below die */
            int rc = cairn_mem_delete(f->mem, ids[rnd() % (uint64_t)n], "round");
            assert_true(rc == CAIRN_OK || rc == CAIRN_ENOTFOUND);
        }
        u.importance = (double)round / 20.0;
        u.metadata = round % 2 ? "{\"round\":1}" : NULL;
        for (int k = 0; k < 10; k++) { /* and change */
            int rc = cairn_mem_update(f->mem, ids[rnd() % (uint64_t)n], &u);
            assert_true(rc == CAIRN_OK || rc == CAIRN_ENOTFOUND);
        }
        if (round % 3 == 1) { /* accesses, folded by the checkpoint */
            char got[4][CAIRN_MEM_ID_MAX + 1];
            (void)recall_ids(f, "deploy cache", got);
            (void)recall_ids(f, "parser review", got);
        }
        for (int k = 0; k < 3; k++) { /* a dead memory comes back */
            cairn_memory *m = NULL;
            if (cairn_mem_restore(f->mem, ids[rnd() % (uint64_t)n], &m) == CAIRN_OK) {
                restored++;
                cairn_mem_free(m);
            }
        }
        if (round == 9)
            assert_int_equal(cairn_mem_clear(f->mem, "tmp"), CAIRN_OK);
        assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
        now = index_files(f->dir);
        assert_true(now >= 1 && now <= 12);
        merges += now <= files;
        files = now;
        most = now > most ? now : most;
        if (round % 5 == 4) {
            close_all(f);
            open_all(f, 0);
            assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
            assert_int_equal(st.index_files, files);
            assert_int_equal(st.unindexed, 0);
            cairn_mem_stats_free(&st);
        }
    }
    assert_true(most >= 3);   /* generations stacked up */
    assert_true(merges >= 2); /* and were merged */
    assert_true(restored > 0);
    rank_all(f, nss, 2, live);
    e_live = export_all(f);
    close_all(f);

    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_true(st.index_files >= 1);
    assert_string_equal(st.index_note, "");
    cairn_mem_stats_free(&st);
    e_chain = export_all(f);
    assert_string_equal(e_chain, e_live);
    rank_all(f, nss, 2, from_chain);
    same_rankings(live, from_chain);
    e_after = export_all(f);
    close_all(f);

    while ((e_replay = index_file(f->dir)) != NULL) { /* every file gone */
        assert_int_equal(remove(e_replay), 0);
        free(e_replay);
    }
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 0);
    {
        cairn_mem_stats st2;
        uint64_t deleted = st.deleted, skipped = st.skipped;
        cairn_mem_stats_free(&st);
        close_all(f);
        open_all(f, 0);
        assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK); /* a whole file */
        close_all(f);
        open_all(f, 0);
        assert_int_equal(cairn_mem_stats_get(f->mem, &st2), CAIRN_OK);
        assert_int_equal(st2.deleted, deleted);
        assert_int_equal(st2.skipped, skipped);
        cairn_mem_stats_free(&st2);
    }
    e_replay = export_all(f);
    assert_string_equal(e_replay, e_after);
    rank_all(f, nss, 2, replayed);
    same_rankings(live, replayed);
    free(e_live);
    free(e_chain);
    free(e_after);
    free(e_replay);
}

/* Ranked by relevance alone, recall asks the text index for k
 * candidates instead of a wider pool: the hits are the wide pool's first k,
 * in the same order, across generations and the RAM tail, with filters
 * that make it ask again (the scores up to the rounding of a sum taken in
 * another order). */
static void a_recall_by_relevance_alone_is_the_wide_pool_cut_to_k(void **state)
{
    fx *f = *state;
    static char ids[2400][CAIRN_MEM_ID_MAX + 1];
    cairn_mem_options wide_o = CAIRN_MEM_OPTIONS_INIT;
    cairn_mem *wide = NULL;
    int n = 0, compared = 0;

    rnd_state = 5;
    /* Files of falling sizes (none merged), dead memories, a RAM tail. */
    static const int adds[] = {1600, 300, 80, 20, 200};
    for (int round = 0; round < 5; round++) {
        store_some(f, n, n + adds[round], ids);
        n += adds[round];
        for (int k = 0; k < 40; k++)
            (void)cairn_mem_delete(f->mem, ids[rnd() % (uint64_t)n], "round");
        if (round < 4)
            assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    }
    assert_true(index_files(f->dir) >= 3);
    /* A weight too small to move any score, but not zero: the wide pool. */
    wide_o.w_relevance = 1.0;
    wide_o.w_access = 1e-300;
    assert_int_equal(cairn_mem_open(f->db, &wide_o, &wide), CAIRN_OK);
    for (int q = 0; q < NQ; q++)
        for (size_t k = 1; k <= 16; k *= 4)
            for (int filter = 0; filter < 3; filter++) {
                cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
                static const char *const decision[] = {"decision"};
                cairn_recall_hit *a = NULL, *b = NULL;
                size_t na = 0, nb = 0;
                ro.k = k;
                ro.min_importance = filter == 1 ? 0.85 : 0; /* one in ten passes */
                ro.categories = filter == 2 ? decision : NULL;
                ro.n_categories = filter == 2;
                assert_int_equal(cairn_mem_recall(f->mem, queries[q], &ro, &a, &na), CAIRN_OK);
                assert_int_equal(cairn_mem_recall(wide, queries[q], &ro, &b, &nb), CAIRN_OK);
                assert_int_equal(na, nb);
                for (size_t i = 0; i < na; i++) {
                    assert_string_equal(a[i].mem.id, b[i].mem.id);
                    /* the same terms, summed in another order: the last bits */
                    assert_true(fabs(a[i].bm25 - b[i].bm25) <= 1e-12 * fabs(b[i].bm25));
                }
                compared += (int)na;
                cairn_recall_free(a, na);
                cairn_recall_free(b, nb);
            }
    assert_true(compared > 200);
    cairn_mem_close(wide);
}

/* The counts a fold gives (deleted, skipped, per namespace) are the same
 * from a chain as from the log alone. */
static void a_chain_counts_the_dead_as_the_log_does(void **state)
{
    fx *f = *state;
    static char ids[900][CAIRN_MEM_ID_MAX + 1];
    cairn_mem_stats a, b;
    char *path;

    rnd_state = 8;
    store_some(f, 0, 600, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    for (int i = 0; i < 600; i += 9)
        assert_int_equal(cairn_mem_delete(f->mem, ids[i], "below"), CAIRN_OK);
    store_some(f, 600, 700, ids);
    assert_int_equal(cairn_mem_delete(f->mem, ids[650], "own"), CAIRN_OK);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    assert_int_equal(index_files(f->dir), 2);
    store_some(f, 700, 760, ids);
    for (int i = 4; i < 700; i += 31)
        (void)cairn_mem_delete(f->mem, ids[i], "later");
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    assert_int_equal(cairn_mem_stats_get(f->mem, &a), CAIRN_OK);
    close_all(f);
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &b), CAIRN_OK);
    assert_true(b.index_files >= 2);
    assert_int_equal(b.deleted, a.deleted);
    assert_int_equal(b.total, a.total);
    assert_int_equal(b.index_rows, a.total);
    cairn_mem_stats_free(&b);
    close_all(f);
    while ((path = index_file(f->dir)) != NULL) {
        assert_int_equal(remove(path), 0);
        free(path);
    }
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &b), CAIRN_OK);
    assert_int_equal(b.deleted, a.deleted);
    assert_int_equal(b.total, a.total);
    assert_int_equal(b.skipped, a.skipped);
    cairn_mem_stats_free(&a);
    cairn_mem_stats_free(&b);
}

/* The store (closed) opens without its index files, saying why (note),
 * with every memory (want: the export); the writer's close writes one whole
 * file in place of the chain, which the next open uses. */
static void rebuilt_then_one_whole_file(fx *f, const char *want, const char *note)
{
    cairn_mem_stats st;
    char *top;
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 0);
    assert_non_null(strstr(st.index_note, note));
    cairn_mem_stats_free(&st);
    export_is(f, want);
    close_all(f);
    assert_int_equal(index_files(f->dir), 1);
    top = index_file(f->dir);
    assert_int_equal(header_u64(top, H_BASE), 0);
    free(top);
    open_all(f, 0);
    export_is(f, want);
}

/* A file the newest one lies on goes missing (removed by hand): the chain
 * is not used, the state is rebuilt from the log and says why, and the
 * writer's close writes one whole file in its place. */
static void a_missing_file_under_the_newest_is_rebuilt_from_the_log(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char *want, *top, base[64];

    rnd_state = 4;
    store_some(f, 0, 500, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    store_some(f, 500, 560, ids);
    for (int i = 0; i < 500; i += 13)
        assert_int_equal(cairn_mem_delete(f->mem, ids[i], "x"), CAIRN_OK);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    want = export_all(f);
    close_all(f);
    assert_int_equal(index_files(f->dir), 2);
    top = index_file(f->dir);
    snprintf(base, sizeof base, "%s/mem-%016" PRIx64 ".cmx", f->dir, header_u64(top, H_BASE));
    assert_int_equal(remove(base), 0);
    free(top);
    /* the close writes a whole file; the one left without its base goes */
    rebuilt_then_one_whole_file(f, want, "missing");
    free(want);
}

/* A shadow row damaged under its sum: found at open (shadow rows are read
 * then), the chain set aside, nothing lost. */
static void a_damaged_shadow_row_sets_the_chain_aside(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char *want, *top;
    uint64_t n_ns, tcap, rows;

    rnd_state = 6;
    store_some(f, 0, 500, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    for (int i = 1; i < 500; i += 17)
        (void)cairn_mem_delete(f->mem, ids[i], "x");
    store_some(f, 500, 520, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    want = export_all(f);
    close_all(f);
    top = index_file(f->dir);
    assert_true(header_u64(top, H_SHADOW) > 0); /* it has shadow rows */
    n_ns = header_u64(top, H_NNS) & 0xffffffffu;
    tcap = header_u64(top, H_TCAP);
    rows = MX_HEAD_LEN + 64 * n_ns + 2 * tcap * 8;
    {
        size_t len = 0;
        uint8_t *b = tu_read_file(top, &len);
        b[rows + 32] ^= 1; /* row 0's access count, under its sum */
        assert_int_equal(tu_write_file(top, b, len), 0);
        free(b);
    }
    free(top);
    rebuilt_then_one_whole_file(f, want, "rebuilt from the log");
    free(want);
}

/* Checkpoints of a growing store: a chain stays short, and the rows all
 * the files ever written hold stay a small multiple of the memories (the
 * cost of a checkpoint follows what changed, not the store). */
static void the_merge_policy_bounds_files_and_rewrites(void **state)
{
    fx *f = *state;
    size_t most = 0;
    uint64_t written = 0;
    char seen[64][64];
    size_t n_seen = 0;

    for (int round = 0; round < 40; round++) {
        DIR *d;
        struct dirent *de;
        store_plain(f, round * 200, round * 200 + 200);
        assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
        most = index_files(f->dir) > most ? index_files(f->dir) : most;
        d = opendir(f->dir);
        while ((de = readdir(d)) != NULL) {
            int known = 0;
            if (strncmp(de->d_name, "mem-", 4) != 0 || strlen(de->d_name) != 24)
                continue;
            for (size_t i = 0; i < n_seen && !known; i++)
                known = strcmp(seen[i], de->d_name) == 0;
            if (!known) { /* written by this checkpoint */
                char *p = tu_join(f->dir, de->d_name);
                written += header_u64(p, H_NROWS);
                free(p);
                if (n_seen < 64)
                    strcpy(seen[n_seen++], de->d_name);
                else
                    n_seen = 0; /* forget: names only grow */
            }
        }
        closedir(d);
    }
    /* 8,000 memories in checkpoints of 200: ratio 2 keeps each file 3x
     * the ones above it together */
    assert_true(most <= 5);
    assert_true(written <= 8000 * 6);
    assert_true(written >= 8000);
}


/* A writer storing, deleting, updating and checkpointing (generations and
 * merges) is killed (SIGKILL) at random moments, again and again: each
 * time the store opens, and its chain of files answers as the log alone
 * does (the same store with every index file removed). */
static void kill_9_during_generations_and_merges_loses_nothing(void **state)
{
    fx *f = *state;
    char *copy = tu_join(f->parent, "replayed");
    uint64_t seed = 77;

    close_all(f);
    for (int round = 0; round < 12; round++) {
        char *a, *b, *path, got;
        int fds[2];
        pid_t pid;
        assert_int_equal(pipe(fds), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            cairn_options o = CAIRN_OPTIONS_INIT;
            cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
            cairn_db *db = NULL;
            cairn_mem *mem = NULL;
            uint64_t r = seed;
            o.durability = CAIRN_DURABILITY_NONE;
            o.segment_size = 64 * 1024;
            if (cairn_open(&db, f->dir, &o, NULL, 0) != CAIRN_OK ||
                cairn_mem_open(db, NULL, &mem) != CAIRN_OK)
                _exit(2);
            for (int it = 0;; it++) {
                char text[96];
                cairn_memory *m = NULL;
                snprintf(text, sizeof text, "round %d item %d %s %s", round, it,
                         vocab[tu_splitmix64(&r) % NVOCAB], vocab[tu_splitmix64(&r) % NVOCAB]);
                if (cairn_mem_store(mem, text, NULL, &m, NULL) != CAIRN_OK)
                    _exit(3);
                if (it % 7 == 3)
                    (void)cairn_mem_delete(mem, m->id, "k");
                u.importance = (double)(it % 10) / 10.0;
                if (it % 5 == 1)
                    (void)cairn_mem_update(mem, m->id, &u);
                cairn_mem_free(m);
                if (it % 40 == 39 && cairn_mem_checkpoint(mem) != CAIRN_OK)
                    _exit(4);
                if (it % 40 == 39 && write(fds[1], "c", 1) != 1)
                    _exit(5);
            }
        }
        /* Two checkpoints in (however slow the machine: sanitizers, a
         * loaded CI), then a kill at a random moment of what follows. */
        close(fds[1]);
        assert_int_equal(read(fds[0], &got, 1), 1);
        assert_int_equal(read(fds[0], &got, 1), 1);
        tu_sleep_ms((long)(tu_splitmix64(&seed) % 120));
        assert_int_equal(kill(pid, SIGKILL), 0);
        {
            int st;
            assert_int_equal(waitpid(pid, &st, 0), pid);
            assert_true(WIFSIGNALED(st)); /* it was still writing */
        }
        close(fds[0]);
        open_all(f, 0);
        a = export_all(f);
        close_all(f);
        tu_rmrf(copy);
        assert_int_equal(tu_copy_dir(f->dir, copy), 0);
        while ((path = index_file(copy)) != NULL) {
            assert_int_equal(remove(path), 0);
            free(path);
        }
        {
            cairn_options o = CAIRN_OPTIONS_INIT;
            cairn_db *db = NULL;
            cairn_mem *mem = NULL;
            size_t len = 0;
            char err[CAIRN_ERRMSG_MAX];
            o.read_only = 1;
            if (cairn_open(&db, copy, &o, err, sizeof err) != CAIRN_OK)
                fail_msg("cairn_open: %s", err);
            assert_int_equal(cairn_mem_open(db, NULL, &mem), CAIRN_OK);
            assert_int_equal(cairn_mem_export(mem, CAIRN_MEM_JSON, &b, &len), CAIRN_OK);
            cairn_mem_close(mem);
            assert_int_equal(cairn_close(db), CAIRN_OK);
        }
        assert_string_equal(a, b);
        free(a);
        free(b);
    }
    tu_rmrf(copy);
    free(copy);
    open_all(f, 0);
    { /* the writers got far: many memories, files written */
        cairn_mem_stats st;
        assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
        assert_true(st.total > 500);
        assert_true(st.index_files >= 1);
        cairn_mem_stats_free(&st);
    }
}


/* A handle with background threads: a close writes only what changed (a
 * generation on the files, however the policy would merge), and once four
 * files of about one size lie on one another, the next handle's merger
 * thread merges them in the background, the merged file named as the
 * newest it replaces; the answers never change. */
/* The log's fdatasyncs while a merge runs (an io table's counter), and
 * the last temp file a merge created. */
static int log_syncs;
static char merge_temp[128];
static pthread_mutex_t merge_temp_mu = PTHREAD_MUTEX_INITIALIZER;

static int note_create(void *user, const char *site, int dirfd, const char *path, int flags,
                       int mode)
{
    (void)user;
    if (strcmp(site, "memindex.create") == 0) {
        pthread_mutex_lock(&merge_temp_mu);
        snprintf(merge_temp, sizeof merge_temp, "%s", path);
        pthread_mutex_unlock(&merge_temp_mu);
    }
    return cairn_io_default()->openat(cairn_io_default()->user, site, dirfd, path, flags, mode);
}

static int count_fdatasync(void *user, const char *site, int fd)
{
    (void)user;
    if (strcmp(site, "segment.fdatasync") == 0)
        __atomic_add_fetch(&log_syncs, 1, __ATOMIC_RELAXED);
    return cairn_io_default()->fdatasync(cairn_io_default()->user, site, fd);
}

/* A merge covers what the files it merges covered, which were durable when
 * they were written: it syncs nothing of the log, however much a writer
 * adds meanwhile (a close that stops the merger would wait for that sync).
 * It writes outside the turn, so its temp file has a name of its own
 * (two merging at once never write one file), which a writer's open
 * still knows for a temp. */
static void a_merge_syncs_nothing_of_the_log(void **state)
{
    fx *f = *state;
    cairn_io io = *cairn_io_default();
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    long long t0;
    int stored = 0;

    store_plain(f, 0, 3000);
    close_all(f);
    for (int round = 0; round < 3; round++) { /* 4 files of about one size */
        open_all(f, 0);
        store_plain(f, 3000 + 1500 * round, 4500 + 1500 * round);
        close_all(f);
    }
    assert_int_equal(index_files(f->dir), 4);
    io.fdatasync = count_fdatasync;
    io.openat = note_create;
    merge_temp[0] = 0;
    o.io = &io;
    o.durability = CAIRN_DURABILITY_NONE; /* nobody syncs the log but a sync asked for */
    o.segment_size = 64 * 1024;
    log_syncs = 0;
    if (cairn_open(&f->db, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(f->db, &mo, &f->mem), CAIRN_OK);
    /* the merger, kicked at open, merges while this handle stores */
    t0 = tu_now_ms();
    while (index_files(f->dir) > 1 && tu_now_ms() - t0 < 10000) {
        char text[64];
        snprintf(text, sizeof text, "written while the merge runs %d", stored++);
        assert_int_equal(cairn_mem_store(f->mem, text, NULL, NULL, NULL), CAIRN_OK);
    }
    assert_int_equal(index_files(f->dir), 1);
    assert_true(stored > 0);
    assert_int_equal(__atomic_load_n(&log_syncs, __ATOMIC_RELAXED), 0);
    pthread_mutex_lock(&merge_temp_mu);
    {
        size_t n = strlen(merge_temp);
        /* mem-<16 hex>.cmx.<16 hex>.tmp */
        assert_int_equal(n, 4 + 16 + 4 + 1 + 16 + 4);
        assert_int_equal(strncmp(merge_temp, "mem-", 4), 0);
        assert_int_equal(merge_temp[24], '.');
        assert_string_equal(merge_temp + n - 4, ".tmp");
        assert_true(cairn__seqfile_is_temp(merge_temp));
    }
    pthread_mutex_unlock(&merge_temp_mu);
    assert_true(cairn__seqfile_is_temp("mem-00000000000186a0.cmx.tmp"));
    assert_true(cairn__seqfile_is_temp("graph-00000000000186a0.cgx.0123456789abcdef.tmp"));
    assert_false(cairn__seqfile_is_temp("graph-00000000000186a0.cgx.0123456789abcdeX.tmp"));
    assert_false(cairn__seqfile_is_temp("mem-00000000000186a0.cmx.01234.tmp"));
    assert_false(cairn__seqfile_is_temp("mem-00000000000186a0..0123456789abcdef.tmp"));
    cairn_mem_close(f->mem); /* few records past the files: no file, no sync */
    f->mem = NULL;
    assert_int_equal(cairn_close(f->db), CAIRN_OK);
    f->db = NULL;
    open_all(f, 0);
}

/* The log fails its fdatasync once armed (a segment site); index files
 * renamed into place are counted. */
static int log_sync_fails, index_renames;

static int count_index_rename(void *user, const char *site, int dirfd, const char *from,
                              const char *to)
{
    (void)user;
    index_renames += strcmp(site, "memindex.rename") == 0;
    return cairn_io_default()->renameat(cairn_io_default()->user, site, dirfd, from, to);
}

static int fail_log_fdatasync(void *user, const char *site, int fd)
{
    (void)user;
    if (log_sync_fails && strncmp(site, "segment.", 8) == 0) {
        errno = EIO;
        return -1;
    }
    return cairn_io_default()->fdatasync(cairn_io_default()->user, site, fd);
}

/* A checkpoint writes its file while the log's fdatasync runs, and puts it
 * in place only once the log it covers is durable: when that sync fails,
 * the checkpoint fails with it, the file is never renamed into place, no
 * temp is left, and a reopen has every memory. */
static void a_checkpoint_whose_log_sync_fails_puts_no_file_in_place(void **state)
{
    fx *f = *state;
    static char ids[100][CAIRN_MEM_ID_MAX + 1];
    cairn_io io = *cairn_io_default();
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "", *want;

    close_all(f);
    tu_rmrf(f->dir);
    io.fdatasync = fail_log_fdatasync;
    io.renameat = count_index_rename;
    o.io = &io;
    o.create = 1;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_NONE; /* nothing syncs the log but the checkpoint */
    mo.w_relevance = 1.0;
    if (cairn_open(&f->db, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(f->db, &mo, &f->mem), CAIRN_OK);
    rnd_state = 7;
    store_some(f, 0, 60, ids);
    want = export_all(f);
    log_sync_fails = 1;
    index_renames = 0;
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_EIO);
    log_sync_fails = 0;
    assert_int_equal(index_renames, 0); /* never put in place, not even for a moment */
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "fdatasync"));
    assert_null(index_file(f->dir));
    assert_null(tu_find_last(f->dir, ".tmp"));
    cairn_mem_close(f->mem);
    f->mem = NULL;
    (void)cairn_close(f->db); /* the handle died with its sync */
    f->db = NULL;
    open_all(f, 0);
    export_is(f, want);
    free(want);
}

/* A background write's sync can be given up: with its stop set, it
 * returns CAIRN_ELOCKED without syncing (a close waits for no merge's
 * sync); without, it syncs as cairn__io_fsync does. */
static int fsyncs;

static int count_fsync(void *user, const char *site, int fd)
{
    (void)user;
    (void)site;
    (void)fd;
    fsyncs++;
    return 0;
}

static void a_stopped_sync_gives_up_without_syncing(void **state)
{
    fx *f = *state;
    cairn_io io = *cairn_io_default();
    cairn__err e;
    char *path = tu_join(f->dir, "sync-me");
    char buf[8192];
    int fd, stop = 1;

    memset(buf, 'x', sizeof buf);
    io.fsync = count_fsync;
    fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, sizeof buf), (ssize_t)sizeof buf);
    memset(&e, 0, sizeof e);
    fsyncs = 0;
    assert_int_equal(cairn__io_fsync_stoppable(&io, "memindex.fsync", fd, sizeof buf, &stop,
                                               "sync-me", &e),
                     CAIRN_ELOCKED);
    assert_int_equal(fsyncs, 0);
    assert_non_null(strstr(e.msg, "given up"));
    stop = 0;
    assert_int_equal(cairn__io_fsync_stoppable(&io, "memindex.fsync", fd, sizeof buf, &stop,
                                               "sync-me", &e),
                     CAIRN_OK);
    assert_int_equal(fsyncs, 1);
    assert_int_equal(cairn__io_fsync_stoppable(&io, "memindex.fsync", fd, sizeof buf, NULL,
                                               "sync-me", &e),
                     CAIRN_OK);
    assert_int_equal(fsyncs, 2);
    close(fd);
    unlink(path);
    free(path);
}

static void the_merger_thread_merges_in_the_background(void **state)
{
    fx *f = *state;
    char *want, *top, *merged;
    cairn_mem_stats st;
    long long t0;

    close_all(f);
    open_all(f, 0); /* background threads (the fixture's default) */
    store_plain(f, 0, 3000);
    close_all(f);
    assert_int_equal(index_files(f->dir), 1);
    for (int round = 0; round < 3; round++) {
        open_all(f, 0); /* fewer than 4 files of about one size: no merge */
        store_plain(f, 3000 + 1500 * round, 4500 + 1500 * round);
        close_all(f);
        /* inline, the policy would merge 1,500 into the 3,000; a close
         * with a merger does not */
        assert_int_equal(index_files(f->dir), (size_t)round + 2);
    }
    top = index_file(f->dir);
    open_all(f, 0);
    want = export_all(f);
    /* the merger, kicked at open, merges while this handle waits */
    t0 = tu_now_ms();
    while (index_files(f->dir) > 1 && tu_now_ms() - t0 < 10000)
        tu_sleep_ms(5);
    assert_int_equal(index_files(f->dir), 1);
    merged = index_file(f->dir);
    assert_string_equal(merged, top); /* in place of the newest */
    assert_int_equal(header_u64(merged, H_BASE), 0); /* a whole file */
    assert_int_equal(header_u64(merged, H_NROWS), 7500);
    export_is(f, want); /* this handle's files are unlinked, still mapped */
    close_all(f);
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, index_files(f->dir));
    assert_int_equal(st.total, 7500);
    assert_int_equal(st.unindexed, 0);
    cairn_mem_stats_free(&st);
    export_is(f, want);
    free(want);
    free(top);
    free(merged);
}


/* The merger thread merging the generations on a whole file carries the
 * changes their shadow rows make to the whole file's memories, though no
 * handle read those memories since its open. */
static void the_merger_carries_shadow_rows(void **state)
{
    fx *f = *state;
    static char ids[6000][CAIRN_MEM_ID_MAX + 1];
    char *want, *got, *top;
    long long t0;

    /* 6,000 memories (3,600 of namespace ""), then 4 x 1,500 more of "":
     * below the limit of 10,000 a namespace, so that nothing is pruned */
    rnd_state = 41;
    store_some(f, 0, 6000, ids);
    close_all(f);
    assert_int_equal(index_files(f->dir), 1);
    for (int round = 0; round < 4; round++) {
        cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
        open_all(f, 0);
        store_plain(f, 1500 * round, 1500 * round + 1500);
        for (int k = 0; k < 10; k++) { /* memories of the whole file */
            u.importance = 0.01 * (10 * round + k + 1);
            assert_int_equal(cairn_mem_update(f->mem, ids[1000 * round + 37 * k], &u), CAIRN_OK);
        }
        close_all(f);
        assert_int_equal(header_u64(top = index_file(f->dir), H_SHADOW), 10);
        free(top);
    }
    assert_int_equal(index_files(f->dir), 5);
    open_all(f, 0); /* the merger, kicked at open: the four generations into one */
    t0 = tu_now_ms();
    while (index_files(f->dir) > 2 && tu_now_ms() - t0 < 10000)
        tu_sleep_ms(5);
    assert_int_equal(index_files(f->dir), 2);
    top = index_file(f->dir);
    assert_int_equal(header_u64(top, H_SHADOW), 40);
    assert_int_not_equal(header_u64(top, H_BASE), 0);
    close_all(f);
    open_all(f, 1);
    for (int round = 0; round < 4; round++)
        for (int k = 0; k < 10; k++)
            assert_true(importance_of(f, ids[1000 * round + 37 * k]) ==
                        0.01 * (10 * round + k + 1));
    want = export_all(f);
    close_all(f);
    /* the same as the log says, with no file in use */
    while ((got = index_file(f->dir)) != NULL) {
        assert_int_equal(remove(got), 0);
        free(got);
    }
    open_all(f, 1);
    export_is(f, want);
    free(want);
    free(top);
}

/* The io of a process killed between an index file's rename and the
 * MANIFEST that lists it: it ends at the first MANIFEST call after. */
static int index_renamed;
static void die_before_manifest(const char *site)
{
    if (index_renamed && strncmp(site, "manifest.", 9) == 0)
        _exit(0);
}
static int rename_then_die(void *u, const char *site, int dirfd, const char *from, const char *to)
{
    int rc;
    die_before_manifest(site);
    rc = cairn_io_default()->renameat(u, site, dirfd, from, to);
    if (rc == 0 && strcmp(site, "memindex.rename") == 0)
        index_renamed = 1;
    return rc;
}
static int open_then_die(void *u, const char *site, int dirfd, const char *path, int flags, int mode)
{
    die_before_manifest(site);
    return cairn_io_default()->openat(u, site, dirfd, path, flags, mode);
}
static ssize_t write_then_die(void *u, const char *site, int fd, const void *buf, size_t len, off_t off)
{
    die_before_manifest(site);
    return cairn_io_default()->pwrite(u, site, fd, buf, len, off);
}

/* The merger puts its file in place under the name of the newest file it
 * merges, then lists it in a MANIFEST that drops the others. This kills
 * it in between: the merged file under a listed name, the files it
 * replaced listed and on disk. Here the merge is of the four newest files,
 * lying on the oldest (*bottom); *want is the store's export. */
static void merge_killed_before_its_manifest(fx *f, char **want, char **bottom)
{
    pid_t pid;
    int status;
    char *top;

    close_all(f);
    open_all(f, 0);
    store_plain(f, 0, 5000); /* more than 4 times the others: not merged with them */
    close_all(f);
    *bottom = index_file(f->dir);
    /* a close writes a file of 1,000 or more; all under the 10,000 a
     * namespace holds */
    for (int round = 0; round < 4; round++) {
        open_all(f, 0);
        store_plain(f, 5000 + 1000 * round, 6000 + 1000 * round);
        close_all(f);
    }
    assert_int_equal(index_files(f->dir), 5);
    open_all(f, 1);
    *want = export_all(f);
    close_all(f);

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cairn_io io = *cairn_io_default();
        cairn_options o = CAIRN_OPTIONS_INIT;
        cairn_db *db = NULL;
        cairn_mem *mem = NULL;
        io.renameat = rename_then_die;
        io.openat = open_then_die;
        io.pwrite = write_then_die;
        o.io = &io;
        o.durability = CAIRN_DURABILITY_NONE;
        if (cairn_open(&db, f->dir, &o, NULL, 0) != CAIRN_OK ||
            cairn_mem_open(db, NULL, &mem) != CAIRN_OK)
            _exit(2);
        tu_sleep_ms(10000); /* the merger, kicked at open, merges meanwhile */
        _exit(3);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    top = index_file(f->dir);
    /* the merged file, on the oldest; and the three it replaced */
    assert_int_equal(header_u64(top, H_BASE), header_u64(*bottom, H_COVERED));
    assert_int_equal(header_u64(top, H_NROWS), 4000);
    assert_int_equal(index_files(f->dir), 5);
    free(top);
}

/* Readers take the old chain meanwhile, and the next writer's open lists
 * the merged file and drops the files it replaced then, not at some later
 * checkpoint (which a store no one writes to again would never have). (A
 * whole file put in place so:
 * a_replacement_whose_manifest_never_came_is_listed_by_the_next_writer.) */
static void a_merge_killed_before_its_manifest_leaves_no_replaced_file(void **state)
{
    fx *f = *state;
    char *want, *bottom;
    cairn_mem_stats st;

    merge_killed_before_its_manifest(f, &want, &bottom);
    open_all(f, 1); /* a reader: the old chain */
    export_is(f, want);
    close_all(f);

    open_all(f, 0);
    assert_int_equal(index_files(f->dir), 2);
    assert_int_equal(access(bottom, F_OK), 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 2);
    assert_int_equal(st.total, 9000);
    assert_int_equal(st.unindexed, 0);
    cairn_mem_stats_free(&st);
    export_is(f, want);
    close_all(f);
    open_all(f, 1);
    export_is(f, want);
    free(want);
    free(bottom);
}

/* The same, but the file the merged one lies on is gone by then (removed
 * by hand here; another writer's merge may have replaced it): the files
 * between are kept, since they are what is left to fall back on, and
 * the memories are all there. */
static void a_merged_file_whose_base_is_gone_drops_nothing(void **state)
{
    fx *f = *state;
    char *want, *bottom;

    merge_killed_before_its_manifest(f, &want, &bottom);
    assert_int_equal(unlink(bottom), 0);
    open_all(f, 0);
    assert_int_equal(index_files(f->dir), 4);
    export_is(f, want);
    free(want);
    free(bottom);
}

/* Ingest n memories (8 namespaces: under the 10,000 of one). */
/* The flush threshold the tests of flushes set (cairn__mem_set_flush_rows):
 * the same paths as 65,536, in a few thousand stores. */
#define TEST_FLUSH_ROWS 4096

static void ingest(cairn_mem *mem, int from, int n)
{
    for (int i = from; i < from + n; i++) {
        char text[64];
        cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
        const char *nss[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
        snprintf(text, sizeof text, "ingest item %d", i);
        so.ns = nss[i % 8];
        assert_int_equal(cairn_mem_store(mem, text, &so, NULL, NULL), CAIRN_OK);
    }
}

/* A long ingest in one handle writes its RAM tail out as a generation each
 * MEM_FLUSH_ROWS (65,536; here TEST_FLUSH_ROWS) memories, so that a close
 * writes only the rest.
 * The handle reads the flush's file in place of its tail at once; the
 * file is put in place on the merger thread, or by the close. */
static void a_long_ingest_writes_its_tail_out_as_it_goes(void **state)
{
    fx *f = *state;
    cairn_mem_stats st;
    char *top;

    cairn__mem_set_flush_rows(f->mem, TEST_FLUSH_ROWS);
    ingest(f->mem, 0, TEST_FLUSH_ROWS + 232);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.total, TEST_FLUSH_ROWS + 232);
    assert_true(st.index_files >= 1);
    assert_true(st.unindexed < 1000); /* the rest is in the files */
    cairn_mem_stats_free(&st);
    close_all(f);
    top = index_file(f->dir);
    assert_non_null(top);
    assert_true(header_u64(top, H_NROWS) >= TEST_FLUSH_ROWS);
    free(top);
    assert_int_equal(index_temps(f->dir), 0); /* the flush's temp went in place */
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.total, TEST_FLUSH_ROWS + 232);
    assert_true(st.unindexed < 1000);
    cairn_mem_stats_free(&st);
}

static int index_fsync_fails;

static int fail_index_fsync(void *user, const char *site, int fd)
{
    (void)user;
    if (index_fsync_fails && strcmp(site, "memindex.fsync") == 0) {
        errno = EIO;
        return -1;
    }
    return cairn_io_default()->fsync(cairn_io_default()->user, site, fd);
}

/* A writer handle whose index files cannot be synced while
 * index_fsync_fails is set. */
static void open_unsyncable(fx *f, cairn_io *io)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    *io = *cairn_io_default();
    io->fsync = fail_index_fsync;
    o.io = io;
    o.create = 1;
    o.durability = CAIRN_DURABILITY_NONE;
    mo.w_relevance = 1.0;
    if (cairn_open(&f->db, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(f->db, &mo, &f->mem), CAIRN_OK);
}

/* An index file's fsync that takes half a second on any thread but the
 * test's own (the merger's, putting a flush's file in place), and a count
 * of those the test's thread makes. */
static pthread_t test_thread;
static int main_index_fsyncs;

static int slow_index_fsync(void *user, const char *site, int fd)
{
    (void)user;
    if (strcmp(site, "memindex.fsync") == 0) {
        if (pthread_equal(pthread_self(), test_thread))
            main_index_fsyncs++;
        else
            tu_sleep_ms(500);
    }
    return cairn_io_default()->fsync(cairn_io_default()->user, site, fd);
}

/* A close that finds a flush's file not in place yet (the merger still
 * syncing it) does not wait for that fsync, nor make its own: it puts the
 * file in place naming the boot, as its own file ("Files written without
 * a sync"). The memories are all there after a reopen. */
static void a_close_does_not_wait_for_a_flush_files_fsync(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "", *name;
    cairn_io io = *cairn_io_default();
    cairn_mem_stats st;
    uint64_t flush_covered;

    close_all(f);
    tu_rmrf(f->dir);
    io.fsync = slow_index_fsync;
    test_thread = pthread_self();
    main_index_fsyncs = 0;
    o.io = &io;
    o.create = 1;
    o.background = 1; /* the merger puts the flush's file in place */
    o.durability = CAIRN_DURABILITY_NONE;
    if (cairn_open(&f->db, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(f->db, &mo, &f->mem), CAIRN_OK);
    cairn__mem_set_flush_rows(f->mem, TEST_FLUSH_ROWS);
    ingest(f->mem, 0, TEST_FLUSH_ROWS + 1100); /* a flush, then a tail a close writes */
    flush_covered = f->mem->pend.on ? f->mem->pend.covered : 0;
    assert_true(flush_covered > 0); /* its fsync is under way on the merger */
    close_all(f);
    assert_int_equal(main_index_fsyncs, 0);
    name = malloc(strlen(f->dir) + 32);
    assert_non_null(name);
    sprintf(name, "%s/mem-%016" PRIx64 ".cmx", f->dir, flush_covered);
    assert_int_equal(header_u64(name, H_UNSYNCED), cairn__boot_id());
    free(name);
    assert_int_equal(index_files(f->dir), 2); /* the flush's and the close's */
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.total, TEST_FLUSH_ROWS + 1100);
    assert_int_equal(st.unindexed, 0);
    cairn_mem_stats_free(&st);
}

/* Writes to the index file, as the io table sees them. */
typedef struct pieces {
    size_t largest;   /* bytes of the largest pwrite */
    uint64_t bytes;   /* of all of them */
} pieces;

static pieces seen_pieces;

static ssize_t note_index_pwrite(void *u, const char *site, int fd, const void *b, size_t n,
                                 off_t off)
{
    const cairn_io *real = cairn_io_default();
    (void)u;
    if (strcmp(site, "memindex.write") == 0) {
        if (n > seen_pieces.largest)
            seen_pieces.largest = n;
        seen_pieces.bytes += n;
    }
    return real->pwrite(real->user, site, fd, b, n, off);
}

/* The index file is written in pieces of at most 64 KiB: a reader maps
 * it, and the page cache keeps what one write() brought in as folios as
 * large as the write, each mapped whole by the first page fault in it
 * (io.h, CAIRN__IO_MAPPED_PIECE). */
static void the_index_file_is_written_in_small_pieces(void **state)
{
    fx *f = *state;
    cairn_io io = *cairn_io_default();
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    char *name;
    struct stat st;
    close_all(f);
    io.pwrite = note_index_pwrite;
    o.io = &io;
    o.durability = CAIRN_DURABILITY_NONE;
    if (cairn_open(&f->db, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(f->db, NULL, &f->mem), CAIRN_OK);
    memset(&seen_pieces, 0, sizeof seen_pieces);
    store_plain(f, 0, 6000);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    name = index_file(f->dir);
    assert_non_null(name);
    assert_int_equal(stat(name, &st), 0);
    free(name);
    assert_true(st.st_size > 4 * (off_t)CAIRN__IO_MAPPED_PIECE);
    assert_true(seen_pieces.bytes >= (uint64_t)st.st_size);
    assert_true(seen_pieces.largest > 0);
    assert_true(seen_pieces.largest <= CAIRN__IO_MAPPED_PIECE);
}

/* A flush's file whose fsync fails on the merger thread is given up, not
 * tried again (a second fsync would report nothing: the kernel told of
 * the lost writeback once): recall found its memories meanwhile, and the
 * close, its own fsync working again, reads the chain on disk again and
 * writes a file holding every memory (no open replays them). */
static void a_flush_file_that_cannot_be_synced_is_given_up(void **state)
{
    fx *f = *state;
    cairn_io io;
    cairn_mem_stats st;
    cairn_stats ls;
    cairn_recall_hit *r = NULL;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    static const char *const ns_b[] = {"b"};
    size_t n = 0;
    char *want, *top;

    close_all(f);
    tu_rmrf(f->dir);
    open_unsyncable(f, &io);
    index_fsync_fails = 1;
    cairn__mem_set_flush_rows(f->mem, TEST_FLUSH_ROWS);
    ingest(f->mem, 0, TEST_FLUSH_ROWS + 100);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_true(st.unindexed < 1000); /* the flushed rows are read from its file */
    cairn_mem_stats_free(&st);
    ro.ns = ns_b; /* item 17's (ingest) */
    ro.n_ns = 1;
    assert_int_equal(cairn_mem_recall(f->mem, "ingest item 17", &ro, &r, &n), CAIRN_OK);
    assert_true(n >= 1);
    assert_string_equal(r[0].mem.content, "ingest item 17");
    cairn_recall_free(r, n);
    /* the merger thread tries its fsync, fails and removes the temp */
    for (int i = 0; i < 500 && index_temps(f->dir) > 0; i++)
        tu_sleep_ms(10);
    assert_int_equal(index_temps(f->dir), 0);
    assert_int_equal(index_files(f->dir), 0); /* never put in place */
    want = export_all(f);
    assert_int_equal(cairn_stats_get(f->db, &ls), CAIRN_OK);
    index_fsync_fails = 0;
    close_all(f);
    top = index_file(f->dir);
    assert_non_null(top);
    assert_true(header_u64(top, H_COVERED) >= ls.last_seq); /* (and the close's access fold) */
    assert_int_equal(header_u64(top, H_BASE), 0); /* whole: not on the given-up file */
    free(top);
    assert_int_equal(index_temps(f->dir), 0);
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_true(st.unindexed < 1000);
    cairn_mem_stats_free(&st);
    export_is(f, want);
    free(want);
}

/* Another handle writes an index file covering more while a flush's file
 * waits to go in place: the flush's file is given up (the newer one holds
 * all it held), and nothing is lost. */
static void a_flush_file_another_writer_overtook_is_given_up(void **state)
{
    fx *f = *state;
    cairn_io io;
    cairn_stats ls;
    ino_t top_ino;
    fx other;
    char *want, *top;

    close_all(f);
    tu_rmrf(f->dir);
    open_unsyncable(f, &io);
    index_fsync_fails = 1; /* its flush's file stays pending */
    cairn__mem_set_flush_rows(f->mem, TEST_FLUSH_ROWS);
    ingest(f->mem, 0, TEST_FLUSH_ROWS + 100);
    memset(&other, 0, sizeof other);
    other.dir = f->dir;
    open_all(&other, 0);
    ingest(other.mem, TEST_FLUSH_ROWS + 100, 1200);
    assert_int_equal(cairn_mem_checkpoint(other.mem), CAIRN_OK);
    assert_int_equal(cairn_stats_get(other.db, &ls), CAIRN_OK);
    close_all(&other);
    top = index_file(f->dir);
    assert_non_null(top);
    assert_int_equal(header_u64(top, H_COVERED), ls.last_seq); /* all of it */
    {
        struct stat st;
        assert_int_equal(stat(top, &st), 0);
        top_ino = st.st_ino;
    }
    want = export_all(f);
    index_fsync_fails = 0; /* its close could put it in place */
    close_all(f);
    assert_int_equal(index_temps(f->dir), 0);
    {
        char *now = index_file(f->dir);
        struct stat st;
        assert_string_equal(now, top);
        assert_int_equal(stat(now, &st), 0);
        assert_int_equal(st.st_ino, top_ino); /* the very file: the pending one never went over it */
        free(now);
    }
    free(top);
    open_all(f, 0);
    export_is(f, want);
    free(want);
}

/* A writer's open removes what a crash left of derived files' temps: a
 * temp written in a turn (no other writer writes one now), and a merger's
 * or a flush's (salted) that no fd holds any more; one a process holds
 * (its lock, as the merger and the flush hold theirs) is left to it, to
 * rename in later. */
static void a_writer_open_leaves_the_temps_of_live_processes(void **state)
{
    fx *f = *state;
    char *held = tu_join(f->dir, "mem-0000000000000007.cmx.0123456789abcdef.tmp");
    char *left = tu_join(f->dir, "mem-0000000000000008.cmx.0123456789abcdef.tmp");
    char *plain = tu_join(f->dir, "mem-0000000000000009.cmx.tmp");
    int fd;

    close_all(f);
    assert_int_equal(tu_write_file(left, "x", 1), 0);
    assert_int_equal(tu_write_file(plain, "x", 1), 0);
    fd = open(held, O_RDWR | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    cairn__seqfile_temp_hold(fd);
    open_all(f, 0);
    assert_int_equal(access(held, F_OK), 0);
    assert_int_equal(access(left, F_OK), -1);
    assert_int_equal(access(plain, F_OK), -1);
    close(fd); /* as a process that died: the next writer's open removes it */
    close_all(f);
    open_all(f, 0);
    assert_int_equal(access(held, F_OK), -1);
    free(held);
    free(left);
    free(plain);
}

/* A process killed after a flush, its file put in place or not: a reopen
 * has every memory, and leaves no temp behind. */
static void a_process_killed_after_a_flush_loses_nothing(void **state)
{
    fx *f = *state;
    cairn_mem_stats st;
    pid_t child;

    close_all(f);
    tu_rmrf(f->dir);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        fx c = {NULL, f->dir, NULL, NULL};
        open_all(&c, 0);
        cairn__mem_set_flush_rows(c.mem, TEST_FLUSH_ROWS);
        ingest(c.mem, 0, TEST_FLUSH_ROWS + 300);
        _exit(0); /* no close: as kill -9 */
    }
    assert_int_equal(waitpid(child, NULL, 0), child);
    open_all(f, 0);
    assert_int_equal(index_temps(f->dir), 0); /* (the sealer may be writing a segment's) */
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.total, TEST_FLUSH_ROWS + 300);
    cairn_mem_stats_free(&st);
}

/* A chain of a whole file (600 memories) and a generation on it (deletes
 * of its memories, 60 new ones). Returns the generation's path. */
static char *two_file_chain(fx *f, char ids[][CAIRN_MEM_ID_MAX + 1])
{
    rnd_state = 12;
    store_some(f, 0, 600, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    for (int i = 1; i < 600; i += 11)
        (void)cairn_mem_delete(f->mem, ids[i], "x");
    store_some(f, 600, 660, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    assert_int_equal(index_files(f->dir), 2);
    return index_file(f->dir);
}

/* Rewrite row i of an index file with bytes changed at off (len bytes
 * of v), its row sum made to match: damage the checks cannot see. */
static void rewrite_row(const char *path, size_t i, size_t off, const void *v, size_t len)
{
    size_t flen = 0, strs;
    uint8_t *b = tu_read_file(path, &flen), *p, *summed;
    uint64_t n_ns, tcap, rows, nrows, sum, str_off;
    uint32_t strs32;
    memcpy(&n_ns, b + H_NNS, 8);
    n_ns &= 0xffffffffu;
    memcpy(&tcap, b + H_TCAP, 8);
    memcpy(&nrows, b + H_NROWS, 8);
    rows = MX_HEAD_LEN + 64 * n_ns + 2 * tcap * 8;
    p = b + rows + 80 * i;
    memcpy(p + off, v, len);
    memcpy(&str_off, p + 48, 8);
    memcpy(&strs32, p + 60, 4); /* the row's part of the heap: id, category, metadata */
    strs = strs32;
    summed = malloc(72 + strs);
    memcpy(summed, p, 72);
    memcpy(summed + 72, b + rows + 80 * nrows + str_off, strs);
    sum = XXH3_64bits(summed, 72 + strs);
    memcpy(p + 72, &sum, 8);
    free(summed);
    assert_int_equal(tu_write_file(path, b, flen), 0);
    free(b);
}

typedef struct vproblem {
    int n;
    char msg[CAIRN_ERRMSG_MAX];
} vproblem;

static void note_vproblem(void *user, const char *file, uint64_t off, int code, const char *msg)
{
    vproblem *p = user;
    (void)file;
    (void)off;
    (void)code;
    p->n++;
    snprintf(p->msg, sizeof p->msg, "%s", msg);
}

/* Damage in the generation on top removes it alone: the whole file below
 * stays in use, and what the generation held is replayed from the log. */
static void a_damaged_generation_goes_alone(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char *want, *top;
    cairn_memory *m = NULL;
    cairn_mem_stats st;

    top = two_file_chain(f, ids);
    want = export_all(f);
    close_all(f);
    flip_byte(top, find_id_in_file(top, ids[650]) + 3); /* an own row's id */
    open_all(f, 0);
    assert_int_equal(cairn_mem_get(f->mem, ids[650], &m), CAIRN_ECORRUPT);
    close_all(f);
    assert_int_equal(access(top, F_OK), -1);
    assert_int_equal(index_files(f->dir), 1); /* the whole file stays */
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 1);
    assert_true(st.unindexed > 0);
    cairn_mem_stats_free(&st);
    export_is(f, want);
    free(want);
    free(top);
}

/* ---- the MANIFEST's list of derived files ---------------------------- */

/* The MANIFEST at dir, its bytes (malloc'd) and length. */
static uint8_t *manifest_bytes(const char *dir, size_t *len)
{
    char *p = tu_join(dir, "MANIFEST");
    uint8_t *b = tu_read_file(p, len);
    assert_non_null(b);
    free(p);
    return b;
}

static void manifest_put(const char *dir, const uint8_t *b, size_t len)
{
    char *p = tu_join(dir, "MANIFEST");
    assert_int_equal(tu_write_file(p, b, len), 0);
    free(p);
}

/* The MANIFEST as it was before the list (version 8): its derived files
 * cut off, n_files 0, the sums made again. No named types in these stores:
 * the files are the last bytes before the trailer. */
static void downgrade_manifest(const char *dir)
{
    size_t len;
    uint8_t *b = manifest_bytes(dir, &len);
    uint32_t n_files, zero = 0;
    uint64_t sum;
    memcpy(&n_files, b + 172, 4);
    assert_int_equal(b[8], 9);
    assert_int_equal(b[168] | b[169], 0); /* no named types */
    len -= 32 * (size_t)n_files;
    b[8] = 8;
    memcpy(b + 172, &zero, 4);
    sum = XXH3_64bits(b, 56);
    memcpy(b + 56, &sum, 8);
    sum = XXH3_64bits(b, len - 8);
    memcpy(b + len - 8, &sum, 8);
    manifest_put(dir, b, len);
    free(b);
}

static uint32_t listed_files(const char *dir)
{
    size_t len;
    uint8_t *b = manifest_bytes(dir, &len);
    uint32_t n;
    assert_int_equal(b[8], 9);
    memcpy(&n, b + 172, 4);
    free(b);
    return n;
}

/* A file renamed into place whose MANIFEST was never written (a crash in
 * between) is not read, and the next writer's open removes it. */
static void an_index_file_the_manifest_does_not_list_is_never_read(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    cairn_mem_stats st;
    char *want, *top;
    size_t len;
    uint8_t *before;

    rnd_state = 21;
    store_some(f, 0, 300, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    close_all(f);
    before = manifest_bytes(f->dir, &len); /* the list of one file */
    open_all(f, 0);
    store_some(f, 300, 360, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    want = export_all(f);
    close_all(f);
    assert_int_equal(index_files(f->dir), 2);
    assert_int_equal(listed_files(f->dir), 2);
    manifest_put(f->dir, before, len); /* as if the MANIFEST write never came */
    top = index_file(f->dir);

    open_all(f, 1); /* a reader: the one listed file, then the log */
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 1);
    assert_true(st.index_seq < header_u64(top, H_COVERED));
    assert_string_equal(st.index_note, "");
    cairn_mem_stats_free(&st);
    export_is(f, want);
    close_all(f);
    assert_int_equal(access(top, F_OK), 0); /* a reader removes nothing */

    open_all(f, 0); /* a writer's open: the leftover goes */
    assert_int_equal(access(top, F_OK), -1);
    assert_int_equal(index_files(f->dir), 1);
    export_is(f, want);
    free(before);
    free(top);
    free(want);
}

/* Another whole file renamed over a listed one a moment ago (a merge
 * putting its file in place) is waited for until the list names it, here
 * until the listed bytes are back; a file removed by hand is taken as not
 * there, and verify does not count it. */
typedef struct put_back {
    char *path, *tmp;
    uint8_t *bytes;
    size_t len;
} put_back;

static void *put_back_later(void *arg)
{
    put_back *p = arg;
    tu_sleep_ms(150);
    assert_int_equal(tu_write_file(p->tmp, p->bytes, p->len), 0);
    assert_int_equal(rename(p->tmp, p->path), 0);
    return NULL;
}

static void a_file_put_in_place_under_a_listed_name_is_waited_for(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char *want, base[64], *base_path;
    cairn_mem_stats st;
    put_back pb;
    pthread_t th;
    size_t blen;
    uint8_t *other;
    uint64_t problems = 9;
    long long t0;

    pb.path = two_file_chain(f, ids);
    want = export_all(f);
    close_all(f);
    pb.tmp = tu_join(f->dir, "put-back.tmp");
    pb.bytes = tu_read_file(pb.path, &pb.len);
    snprintf(base, sizeof base, "mem-%016" PRIx64 ".cmx", header_u64(pb.path, H_BASE));
    base_path = tu_join(f->dir, base);
    other = tu_read_file(base_path, &blen); /* a whole file, its header sound */
    assert_int_equal(tu_write_file(pb.tmp, other, blen), 0);
    assert_int_equal(rename(pb.tmp, pb.path), 0);

    assert_int_equal(pthread_create(&th, NULL, put_back_later, &pb), 0);
    t0 = tu_now_ms();
    open_all(f, 1);
    assert_true(tu_now_ms() - t0 >= 100); /* it waited for the listed bytes */
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 2); /* then read the chain */
    assert_string_equal(st.index_note, "");
    cairn_mem_stats_free(&st);
    export_is(f, want);

    /* Another file under the name, its header damaged: verify names it,
     * at once (a whole one renamed in a moment ago would be in flight). */
    other[20] ^= 0x40;
    assert_int_equal(tu_write_file(pb.tmp, other, blen), 0);
    assert_int_equal(rename(pb.tmp, pb.path), 0);
    assert_int_equal(cairn_verify(f->db, NULL, NULL, &problems), CAIRN_OK);
    assert_int_equal(problems, 1);
    /* Removed by hand: not there for readers, not a problem for verify. */
    assert_int_equal(unlink(pb.path), 0);
    assert_int_equal(cairn_verify(f->db, NULL, NULL, &problems), CAIRN_OK);
    assert_int_equal(problems, 0);
    close_all(f);
    open_all(f, 1);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 1); /* the whole file alone */
    cairn_mem_stats_free(&st);
    export_is(f, want);
    close_all(f);
    open_all(f, 0); /* a writer's open drops it from the list */
    assert_int_equal(listed_files(f->dir), 1);
    free(other);
    free(base_path);
    free(pb.bytes);
    free(pb.tmp);
    free(pb.path);
    free(want);
}

/* A whole file put in place under a listed name whose MANIFEST write then
 * failed (a crash there leaves the same): readers never take it for the
 * listed file, nor remove it; the next writer's open lists it as it is. */
static int renamed_index;
static int fail_manifest_after_rename(void *u, const char *site, int dirfd, const char *from,
                                      const char *to)
{
    if (strcmp(site, "memindex.rename") == 0)
        renamed_index = 1;
    if (renamed_index && strcmp(site, "manifest.rename") == 0) {
        errno = EIO;
        return -1;
    }
    return cairn_io_default()->renameat(u, site, dirfd, from, to);
}

static void a_replacement_whose_manifest_never_came_is_listed_by_the_next_writer(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    cairn_io io = *cairn_io_default();
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "", *want, *top = two_file_chain(f, ids);
    uint64_t covered = header_u64(top, H_COVERED), problems = 9;
    cairn_mem_stats st;

    want = export_all(f);
    close_all(f);
    io.renameat = fail_manifest_after_rename;
    renamed_index = 0;
    o.io = &io;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_NONE;
    assert_int_equal(cairn_open(&f->db, f->dir, &o, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_mem_open(f->db, NULL, &f->mem), CAIRN_OK);
    /* one whole file of the same state, under the top's name */
    pthread_mutex_lock(&f->mem->mu); /* as cairn_mem_checkpoint holds it */
    assert_int_equal(cairn__mem_checkpoint_whole(f->mem), CAIRN_EIO);
    pthread_mutex_unlock(&f->mem->mu);
    assert_int_equal(renamed_index, 1);
    close_all(f);
    assert_int_equal(header_u64(top, H_BASE), 0); /* the new bytes are there */

    open_all(f, 1); /* a reader: not the listed file; the whole one below it */
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_true(st.index_seq < covered);
    cairn_mem_stats_free(&st);
    export_is(f, want);
    close_all(f);
    assert_int_equal(access(top, F_OK), 0); /* a reader removes nothing */

    open_all(f, 0); /* a writer's open lists it as it is, and drops the one below */
    assert_int_equal(index_files(f->dir), 1);
    assert_int_equal(cairn_verify(f->db, NULL, NULL, &problems), CAIRN_OK);
    assert_int_equal(problems, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_seq, covered);
    assert_int_equal(st.index_files, 1);
    assert_string_equal(st.index_note, "");
    cairn_mem_stats_free(&st);
    export_is(f, want);
    free(top);
    free(want);
}

/* A store whose MANIFEST predates the list: its files are read (the
 * directory is the list), and the next MANIFEST a writer writes lists them. */
static void a_manifest_before_the_list_reads_the_files_of_the_directory(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char *want, *top = two_file_chain(f, ids);
    cairn_mem_stats st;

    want = export_all(f);
    close_all(f);
    downgrade_manifest(f->dir);
    open_all(f, 1);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 2);
    assert_int_equal(st.index_seq, header_u64(top, H_COVERED));
    cairn_mem_stats_free(&st);
    export_is(f, want);
    close_all(f);
    open_all(f, 0);
    store_some(f, 660, 700, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK); /* a generation on the two */
    assert_int_equal(index_files(f->dir), 3);
    assert_int_equal(listed_files(f->dir), 3);
    free(top);
    free(want);
}

/* Damage in the whole file under a generation: both go at open (the
 * generation is of no use without it), and the next opens do not look
 * for them again. */
static void a_damaged_base_takes_its_generations_with_it(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char *want, *top, base[64];
    cairn_mem_stats st;

    top = two_file_chain(f, ids);
    want = export_all(f);
    close_all(f);
    snprintf(base, sizeof base, "%s/mem-%016" PRIx64 ".cmx", f->dir, header_u64(top, H_BASE));
    flip_byte(base, 20); /* its header */
    open_all(f, 1);     /* a reader: it sets them aside too */
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 0);
    assert_non_null(strstr(st.index_note, "rebuilt from the log"));
    cairn_mem_stats_free(&st);
    export_is(f, want);
    close_all(f);
    assert_int_equal(index_files(f->dir), 0);
    open_all(f, 1);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_string_equal(st.index_note, ""); /* nothing left to trip on */
    cairn_mem_stats_free(&st);
    close_all(f);
    open_all(f, 0);
    free(want);
    free(top);
}

/* Files sound one by one that do not fold together (a shadow row names a
 * memory of another namespace than the one below): verify says so, open
 * does not use them. */
static void verify_checks_that_a_chain_folds(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char *top, *want;
    uint64_t problems = 0;
    uint32_t nsi;
    vproblem p;

    top = two_file_chain(f, ids);
    want = export_all(f);
    close_all(f);
    assert_true(header_u64(top, H_SHADOW) > 0);
    {
        size_t flen = 0;
        uint8_t *b = tu_read_file(top, &flen);
        uint64_t n_ns = header_u64(top, H_NNS) & 0xffffffffu, tcap = header_u64(top, H_TCAP);
        memcpy(&nsi, b + MX_HEAD_LEN + 64 * n_ns + 2 * tcap * 8 + 64, 4);
        free(b);
    }
    nsi = nsi == 0 ? 1 : 0; /* another namespace */
    rewrite_row(top, 0, 64, &nsi, 4);
    {
        cairn_options o = CAIRN_OPTIONS_INIT;
        char err[CAIRN_ERRMSG_MAX];
        o.read_only = 1;
        if (cairn_open(&f->db, f->dir, &o, err, sizeof err) != CAIRN_OK)
            fail_msg("cairn_open: %s", err);
        memset(&p, 0, sizeof p);
        assert_int_equal(cairn_mem_verify_index(f->db, note_vproblem, &p, &problems, NULL),
                         CAIRN_OK);
        assert_int_equal(cairn_close(f->db), CAIRN_OK);
        f->db = NULL;
    }
    assert_int_equal(problems, 1);
    assert_int_equal(p.n, 1);
    assert_non_null(strstr(p.msg, "no file below holds live"));
    assert_int_equal(index_files(f->dir), 2); /* verify removes nothing */
    open_all(f, 0);
    export_is(f, want); /* the open did not use them */
    assert_int_equal(index_files(f->dir), 1); /* and set the generation aside */
    free(want);
    free(top);
}

static uint64_t verify_with(fx *f, vproblem *p)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX];
    uint64_t problems = 0;
    o.read_only = 1;
    if (cairn_open(&f->db, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    memset(p, 0, sizeof *p);
    assert_int_equal(cairn_mem_verify_index(f->db, note_vproblem, p, &problems, NULL), CAIRN_OK);
    assert_int_equal(cairn_close(f->db), CAIRN_OK);
    f->db = NULL;
    return problems;
}

/* The file keeps no content: verify reads each memory's store record in
 * the log (sealed and not) and checks its row against it; a row whose
 * length is not its record's is found there, and a read of that memory
 * refuses it too. */
static void verify_checks_each_row_against_its_store_record(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char *path;
    vproblem p;
    uint32_t len;
    int refused = 0;

    build_history(f, ids);
    close_all(f);
    path = index_file(f->dir);
    assert_non_null(path);
    assert_int_equal(verify_with(f, &p), 0);
    {
        size_t flen = 0;
        uint8_t *b = tu_read_file(path, &flen);
        uint64_t n_ns = header_u64(path, H_NNS) & 0xffffffffu, tcap = header_u64(path, H_TCAP);
        memcpy(&len, b + MX_HEAD_LEN + 64 * n_ns + 2 * tcap * 8 + 3 * 80 + 56, 4);
        free(b);
    }
    len++;
    rewrite_row(path, 3, 56, &len, 4);
    assert_int_equal(verify_with(f, &p), 1);
    assert_int_equal(p.n, 1);
    assert_non_null(strstr(p.msg, "row 3"));
    assert_non_null(strstr(p.msg, "holds other content"));
    open_all(f, 1);
    for (int i = 0; i < 600; i++) {
        cairn_memory *m = NULL;
        int rc = cairn_mem_get(f->mem, ids[i], &m);
        if (rc == CAIRN_ECORRUPT) {
            refused++;
            assert_non_null(strstr(cairn_mem_errmsg(f->mem), "not its store record"));
        }
        cairn_mem_free(m);
    }
    assert_int_equal(refused, 1);
    close_all(f);
    free(path);
}

/* The oldest index file's name in dir (the bottom of the chain). */
static char *oldest_index_file(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char best[64] = "";
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (strncmp(de->d_name, "mem-", 4) == 0 && n == 24 && strcmp(de->d_name + n - 4, ".cmx") == 0 &&
            (best[0] == 0 || strcmp(de->d_name, best) < 0))
            strcpy(best, de->d_name);
    }
    closedir(d);
    return best[0] ? tu_join(dir, best) : NULL;
}

/* A whole file, and a generation on it whose shadow rows change memories
 * 5 and 8 of the whole file (importance 0.55 and 0.88). */
static void chain_with_changes(fx *f, char ids[][CAIRN_MEM_ID_MAX + 1])
{
    cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
    rnd_state = 31;
    store_some(f, 0, 600, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    u.importance = 0.55;
    assert_int_equal(cairn_mem_update(f->mem, ids[5], &u), CAIRN_OK);
    u.importance = 0.88;
    assert_int_equal(cairn_mem_update(f->mem, ids[8], &u), CAIRN_OK);
    store_some(f, 600, 610, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    assert_int_equal(index_files(f->dir), 2);
}

/* An open reads no memory a shadow row changes: the memory takes its
 * shadow row when first read. Memory 5's row in the whole file is damaged
 * under its sum: the open does not see it, reading memory 8 gives its
 * change, reading memory 5 finds the damage; the log has everything. */
static void a_shadow_row_is_taken_when_its_memory_is_first_read(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    cairn_memory *m = NULL;
    char *base;

    chain_with_changes(f, ids);
    close_all(f);
    base = oldest_index_file(f->dir);
    flip_byte(base, find_id_in_file(base, ids[5]) + 2);
    open_all(f, 1);
    assert_string_equal(cairn_mem_index_note(f->mem), ""); /* the chain is in use */
    assert_true(importance_of(f, ids[8]) == 0.88);
    assert_int_equal(cairn_mem_get(f->mem, ids[5], &m), CAIRN_ECORRUPT);
    assert_null(m);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "damaged"));
    close_all(f);
    assert_int_equal(access(base, F_OK), -1); /* set aside */
    open_all(f, 0);
    assert_true(importance_of(f, ids[5]) == 0.55);
    assert_true(importance_of(f, ids[8]) == 0.88);
    free(base);
}

/* A file written in place of the generation whose shadow rows changed
 * memories of the file below carries those changes, though the writer
 * never read those memories. */
static void a_file_replacing_shadow_rows_carries_them(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    char *top;

    chain_with_changes(f, ids);
    close_all(f);
    open_all(f, 0);
    store_some(f, 610, 630, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK); /* the generation and the tail */
    close_all(f);
    assert_int_equal(index_files(f->dir), 2);
    top = index_file(f->dir);
    assert_int_equal(header_u64(top, H_SHADOW), 2);
    open_all(f, 1);
    assert_true(importance_of(f, ids[5]) == 0.55);
    assert_true(importance_of(f, ids[8]) == 0.88);
    assert_true(importance_of(f, ids[9]) == 0.9);
    free(top);
}

/* A shadow row naming a memory of another namespace than the one it
 * changes (damage its sum cannot see): found when that memory is first
 * read, the chain set aside; the next open rebuilds it from the log. */
static void a_shadow_row_that_does_not_fold_is_found_when_read(void **state)
{
    fx *f = *state;
    static char ids[700][CAIRN_MEM_ID_MAX + 1];
    cairn_memory *m = NULL;
    char *top, *want;
    uint32_t nsi = 0; /* "work": memory 5 is of "" */

    chain_with_changes(f, ids);
    want = export_all(f);
    close_all(f);
    top = index_file(f->dir);
    rewrite_row(top, 0, 64, &nsi, 4); /* memory 5's shadow row (seq order) */
    open_all(f, 1);
    assert_int_equal(cairn_mem_get(f->mem, ids[5], &m), CAIRN_ECORRUPT);
    assert_null(m);
    assert_non_null(strstr(cairn_mem_errmsg(f->mem), "which no file below holds"));
    close_all(f);
    assert_int_equal(index_files(f->dir), 1); /* the generation set aside */
    open_all(f, 0);
    export_is(f, want);
    free(want);
    free(top);
}

/* ---- ids in rows: cairn's as 8 bytes, any other as text ------------- */

/* The index file of dir covering the most, mapped (the caller closes it). */
static void map_newest(const char *dir, memindex *mx)
{
    cairn__err e;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dirfd >= 0);
    if (cairn__mx_open(mx, cairn_io_default(), dirfd, UINT64_MAX, 0, &e) != CAIRN_OK)
        fail_msg("cairn__mx_open: %s", e.msg);
    close(dirfd);
}

/* An id cairn made, and one a caller gave in its form, are kept as their
 * 64-bit value (row flag bit 2); ids one character off that form (a
 * capital M, a digit that is not hex, 17 digits) and others stay text.
 * Each comes back from the file by its id with its content. */
static void ids_of_both_forms_come_back_from_the_file(void **state)
{
    fx *f = *state;
    static const char *const given[] = {"M0000000000000001", "m000000000000000G",
                                        "m00000000000000001", "note-1", "m00000000000000ff"};
    enum { NGIVEN = sizeof given / sizeof given[0], N = NGIVEN + 1 };
    char ids[N][CAIRN_MEM_ID_MAX + 1], text[N][64], *path;
    cairn_mem_stats st;
    memindex mx;

    for (int i = 0; i < N; i++) {
        cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
        cairn_memory *m = NULL;
        snprintf(text[i], sizeof text[i], "memory %d of the id forms", i);
        so.id = i == 0 ? NULL : given[i - 1]; /* the first: an id cairn makes */
        so.category = i % 2 ? "note" : "fact";
        so.metadata = i % 3 == 1 ? "{\"k\":1}" : NULL;
        so.expires_at = i % 2 ? 4102444800000ll : 0; /* expiresAt before the id */
        assert_int_equal(cairn_mem_store(f->mem, text[i], &so, &m, NULL), CAIRN_OK);
        strcpy(ids[i], m->id);
        cairn_mem_free(m);
    }
    assert_int_equal(strlen(ids[0]), 17);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    close_all(f);

    /* the file: rows in the order stored, the hex flag on cairn's forms */
    map_newest(f->dir, &mx);
    assert_int_equal(mx.nrows, N);
    for (size_t i = 0; i < N; i++) {
        mx_row r;
        int hex = i == 0 || i == N - 1;
        assert_int_equal(cairn__mx_row(&mx, i, &r), CAIRN_OK);
        assert_string_equal(r.id, ids[i]);
        assert_int_equal(get32le(mx.rows + i * 80 + 68) & 4, hex ? 4 : 0);
    }
    cairn__mx_close(&mx);
    path = index_file(f->dir);
    for (int i = 0; i < N; i++) {
        int hex = i == 0 || i == N - 1;
        (void)find_id_in_file(path, ids[i]); /* as 8 bytes or as text */
        if (hex) /* and never as text */
            assert_int_equal(offset_in_file(path, ids[i], strlen(ids[i])), SIZE_MAX);
    }
    free(path);

    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_rows, N);
    assert_int_equal(st.unindexed, 0);
    cairn_mem_stats_free(&st);
    for (int i = 0; i < N; i++) {
        cairn_memory *m = NULL;
        assert_int_equal(cairn_mem_get(f->mem, ids[i], &m), CAIRN_OK);
        assert_string_equal(m->id, ids[i]);
        assert_string_equal(m->content, text[i]);
        assert_string_equal(m->category, i % 2 ? "note" : "fact");
        assert_int_equal(m->expires_at, i % 2 ? 4102444800000ll : 0);
        cairn_mem_free(m);
    }
    /* an id one digit off a stored one is not found */
    {
        cairn_memory *m = NULL;
        assert_int_equal(cairn_mem_get(f->mem, "m00000000000000fe", &m), CAIRN_ENOTFOUND);
        assert_null(m);
    }
}

/* The hex flag set on rows whose ids are text, the row sums made to
 * match: the 8 bytes taken for the id leave no category ("n1", a part of
 * 5 bytes), or a metadata with a NUL inside ("user-note-1", with
 * metadata). Either is CAIRN_ECORRUPT when the row is read, never a
 * crash; the next open rebuilds from the log and loses nothing. */
static void a_hex_flag_on_a_text_id_is_damage(void **state)
{
    fx *f = *state;
    static const char *const id[2] = {"n1", "user-note-1"};
    uint32_t flags = 4;
    char *path;
    memindex mx;

    for (int i = 0; i < 2; i++) {
        cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
        so.id = id[i];
        so.category = i ? "fact" : "x";
        so.metadata = i ? "{\"k\":1}" : NULL;
        assert_int_equal(cairn_mem_store(f->mem, i ? "the second text" : "the first text", &so,
                                         NULL, NULL),
                         CAIRN_OK);
    }
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    close_all(f);
    path = index_file(f->dir);
    for (size_t i = 0; i < 2; i++) {
        mx_row r;
        map_newest(f->dir, &mx);
        assert_int_equal(get32le(mx.rows + i * 80 + 68), 0);
        assert_int_equal(cairn__mx_row(&mx, i, &r), CAIRN_OK);
        assert_string_equal(r.id, id[i]);
        cairn__mx_close(&mx);
        rewrite_row(path, i, 68, &flags, 4);
        map_newest(f->dir, &mx);
        assert_int_equal(cairn__mx_row(&mx, i, &r), CAIRN_ECORRUPT);
        cairn__mx_close(&mx);
    }
    open_all(f, 0);
    for (int i = 0; i < 2; i++) {
        cairn_memory *m = NULL;
        assert_int_equal(cairn_mem_get(f->mem, id[i], &m), CAIRN_ECORRUPT);
        assert_null(m);
    }
    close_all(f);
    assert_int_equal(access(path, F_OK), -1); /* set aside */
    open_all(f, 0);
    for (int i = 0; i < 2; i++) {
        cairn_memory *m = NULL;
        assert_int_equal(cairn_mem_get(f->mem, id[i], &m), CAIRN_OK);
        assert_string_equal(m->content, i ? "the second text" : "the first text");
        cairn_mem_free(m);
    }
    free(path);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

/* A close's small file goes in place without its fsync and names the boot
 * it was written in (format-spec/memindex.md, "Files written without a
 * sync"); an explicit checkpoint's file is synced (0 there). In the same
 * boot the file is used as it is. After a restart of the machine (another
 * boot id) it is set aside, the file below it is used, and its records
 * are replayed from the log: the same answers, said in the index note,
 * and the next close writes the file again, in the new boot. */
static void a_close_file_is_unsynced_and_set_aside_after_a_restart(void **state)
{
    fx *f = *state;
    static char ids[2000][CAIRN_MEM_ID_MAX + 1];
    static ranking before[NQ], after[NQ];
    const char *nss[] = {"", "work"};
    char *whole, *top, *top2, *want;
    cairn_mem_stats st;
    uint64_t boot = cairn__boot_id(), other;

    assert_true(boot != 0);
    rnd_state = 7;
    store_some(f, 0, 800, ids);
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    whole = index_file(f->dir);
    assert_int_equal(header_u64(whole, H_UNSYNCED), 0);
    store_some(f, 800, 2000, ids);
    for (int i = 0; i < 800; i += 7)
        assert_int_equal(cairn_mem_delete(f->mem, ids[i], "x"), CAIRN_OK);
    rank_all(f, nss, 2, before);
    want = export_all(f);
    close_all(f);
    top = index_file(f->dir);
    assert_string_not_equal(top, whole);
    assert_int_equal(header_u64(top, H_BASE), header_u64(whole, H_COVERED));
    assert_int_equal(header_u64(top, H_UNSYNCED), boot);

    /* The same boot: the file is used. */
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 2);
    assert_int_equal(st.unindexed, 0);
    assert_string_equal(st.index_note, "");
    cairn_mem_stats_free(&st);
    export_is(f, want); /* before the recalls: they count as accesses */
    rank_all(f, nss, 2, after);
    same_rankings(before, after);
    free(want);
    want = export_all(f);
    close_all(f);

    /* Another boot: set aside, replayed, answered the same. */
    other = boot ^ 0x5bd1e9955bd1e995ull;
    cairn__boot_id_set(other);
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 1);
    assert_true(st.unindexed >= 1000);
    assert_non_null(strstr(st.index_note, "unsynced"));
    cairn_mem_stats_free(&st);
    assert_int_not_equal(access(top, F_OK), 0);
    assert_int_equal(access(whole, F_OK), 0);
    export_is(f, want);
    memset(after, 0, sizeof after);
    rank_all(f, nss, 2, after);
    same_rankings(before, after);
    close_all(f);
    top2 = index_file(f->dir);
    assert_string_not_equal(top2, whole);
    assert_int_equal(header_u64(top2, H_UNSYNCED), other);
    open_all(f, 0);
    assert_int_equal(cairn_mem_stats_get(f->mem, &st), CAIRN_OK);
    assert_int_equal(st.index_files, 2);
    assert_int_equal(st.unindexed, 0);
    cairn_mem_stats_free(&st);
    cairn__boot_id_set(0);
    free(whole);
    free(top);
    free(top2);
    free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(reopened_from_the_file_equals_the_live_state_and_a_full_replay),
        T(a_damaged_file_is_set_aside_and_nothing_is_lost),
        T(a_file_of_an_older_version_is_rebuilt_from_the_log),
        T(a_read_only_handle_reads_the_file_and_cannot_write_one),
        T(a_failing_disk_while_writing_the_file_loses_nothing),
        T(two_handles_on_one_store_lose_nothing_to_the_file),
        T(a_damaged_term_is_not_written_on),
        T(a_lying_live_count_cannot_overflow_the_prune),
        T(checkpoints_while_threads_store_and_recall),
        T(a_planted_symlink_is_neither_written_through_nor_read),
        T(a_checkpoint_killed_midway_leaves_a_temp_the_next_writer_open_removes),
        T(a_close_writes_a_generation_of_what_changed),
        T(generations_answer_as_the_live_state_and_a_full_replay),
        T(a_recall_by_relevance_alone_is_the_wide_pool_cut_to_k),
        T(a_chain_counts_the_dead_as_the_log_does),
        T(a_missing_file_under_the_newest_is_rebuilt_from_the_log),
        T(a_damaged_shadow_row_sets_the_chain_aside),
        T(the_merge_policy_bounds_files_and_rewrites),
        T(kill_9_during_generations_and_merges_loses_nothing),
        T(the_merger_thread_merges_in_the_background),
        T(the_merger_carries_shadow_rows),
        T(a_merge_killed_before_its_manifest_leaves_no_replaced_file),
        T(a_merged_file_whose_base_is_gone_drops_nothing),
        T(a_merge_syncs_nothing_of_the_log),
        T(a_checkpoint_whose_log_sync_fails_puts_no_file_in_place),
        T(a_stopped_sync_gives_up_without_syncing),
        T(a_long_ingest_writes_its_tail_out_as_it_goes),
        T(the_index_file_is_written_in_small_pieces),
        T(a_flush_file_that_cannot_be_synced_is_given_up),
        T(a_flush_file_another_writer_overtook_is_given_up),
        T(a_writer_open_leaves_the_temps_of_live_processes),
        T(a_process_killed_after_a_flush_loses_nothing),
        T(a_damaged_generation_goes_alone),
        T(a_damaged_base_takes_its_generations_with_it),
        T(an_index_file_the_manifest_does_not_list_is_never_read),
        T(a_file_put_in_place_under_a_listed_name_is_waited_for),
        T(a_manifest_before_the_list_reads_the_files_of_the_directory),
        T(a_replacement_whose_manifest_never_came_is_listed_by_the_next_writer),
        T(verify_checks_that_a_chain_folds),
        T(verify_checks_each_row_against_its_store_record),
        T(a_shadow_row_is_taken_when_its_memory_is_first_read),
        T(a_file_replacing_shadow_rows_carries_them),
        T(a_shadow_row_that_does_not_fold_is_found_when_read),
        T(ids_of_both_forms_come_back_from_the_file),
        T(a_hex_flag_on_a_text_id_is_damage),
        T(a_close_file_is_unsynced_and_set_aside_after_a_restart),
        T(a_failing_disk_during_a_close_loses_nothing),
        T(a_close_does_not_wait_for_a_flush_files_fsync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
