/*
 * test_access.c - access statistics without a log write per read
 * (engine/memory/access.c, format-spec/access.md): a recall appends its
 * accesses to the side file ACCESS and never a record; the ranking and
 * every copy count them at once, in this handle and in another (read-only,
 * another cairn_db, another process); a writer folds them into one record,
 * which replay and the memory index file agree with; a damaged or foreign
 * side file is read around; a recall that cannot record still succeeds;
 * concurrent processes recalling through folds lose no access.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "accfile.h"
#include "bytes.h"
#include "cairn.h"
#include "cairn_sys.h"
#include "testutil.h"

typedef struct fx {
    char *dir;
    char *acc; /* dir/ACCESS */
    cairn_db *db;
    cairn_mem *mem;
} fx;

static void open_mem_with(fx *f, const cairn_mem_options *o)
{
    char err[CAIRN_ERRMSG_MAX] = "";
    if (tu_open_small(f->dir, 0, &f->db, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_mem_open(f->db, o, &f->mem), CAIRN_OK);
}

static void close_mem(fx *f)
{
    cairn_mem_close(f->mem);
    f->mem = NULL;
    assert_int_equal(cairn_close(f->db), CAIRN_OK);
    f->db = NULL;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    char *d = tu_mkdtemp("access");
    if (f == NULL || d == NULL)
        return -1;
    f->dir = tu_join(d, "store");
    f->acc = tu_join(f->dir, "ACCESS");
    free(d);
    open_mem_with(f, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char *parent;
    if (f->mem != NULL || f->db != NULL)
        close_mem(f);
    parent = strdup(f->dir);
    *strrchr(parent, '/') = 0;
    tu_rmrf(parent);
    free(parent);
    free(f->dir);
    free(f->acc);
    free(f);
    return 0;
}

static char *store(cairn_mem *m, const char *content)
{
    cairn_memory *out = NULL;
    char *id;
    assert_int_equal(cairn_mem_store(m, content, NULL, &out, NULL), CAIRN_OK);
    id = strdup(out->id);
    cairn_mem_free(out);
    return id;
}

static uint64_t records(cairn_db *db)
{
    cairn_stats st;
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    return st.records;
}

/* Recall query, expecting `want` hits; returns the hits' ids in order in
 * ids (up to 4). */
static void recall(cairn_mem *m, const char *query, size_t want, char ids[][CAIRN_MEM_ID_MAX + 1])
{
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    assert_int_equal(cairn_mem_recall(m, query, NULL, &h, &n), CAIRN_OK);
    assert_int_equal(n, want);
    for (size_t i = 0; ids != NULL && i < n && i < 4; i++)
        strcpy(ids[i], h[i].mem.id);
    cairn_recall_free(h, n);
}

static uint64_t count_of(cairn_mem *m, const char *id)
{
    cairn_memory *g = NULL;
    uint64_t n;
    assert_int_equal(cairn_mem_get(m, id, &g), CAIRN_OK);
    n = g->access_count;
    cairn_mem_free(g);
    return n;
}

static int contains(const char *p, size_t len, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= len; i++)
        if (memcmp(p + i, needle, k) == 0)
            return 1;
    return 0;
}

/* The memory.access records of the log: how many, and how many of the fold form. */
static void access_records(cairn_db *db, unsigned *all, unsigned *folds)
{
    cairn_range r = CAIRN_RANGE_INIT;
    cairn_iter *it = NULL;
    cairn_record rec;
    int rc;
    *all = *folds = 0;
    r.type = CAIRN_REC_MEMORY_ACCESS;
    assert_int_equal(cairn_iter_open(db, &r, &it), CAIRN_OK);
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        (*all)++;
        if (contains(rec.json, rec.json_len, "\"counts\":"))
            (*folds)++;
    }
    assert_int_equal(rc, CAIRN_ENOTFOUND);
    cairn_iter_close(it);
}

/* ---- the log stays still ------------------------------------------------ */

static void a_recall_appends_no_record_and_one_entry_per_hit(void **state)
{
    fx *f = *state;
    char *a = store(f->mem, "the CI cache lives in S3");
    char *b = store(f->mem, "the CI runner uses docker");
    uint64_t before = records(f->db);
    unsigned all, folds;

    assert_int_equal(tu_file_size(f->acc), -1); /* made by the first recall */
    for (int i = 0; i < 5; i++)
        recall(f->mem, "CI", 2, NULL);
    assert_int_equal(records(f->db), before);
    assert_int_equal(tu_file_size(f->acc), ACC_HDR_SIZE + 10 * ACC_ENTRY_SIZE);
    access_records(f->db, &all, &folds);
    assert_int_equal(all, 0);
    assert_int_equal(count_of(f->mem, a), 5);
    assert_int_equal(count_of(f->mem, b), 5);
    assert_int_equal(cairn_mem_access_unrecorded(f->mem), 0);
    free(a);
    free(b);
}

/* The bound: 10,000 recalls of 2 memories grow the log by at most
 * 20 records; here by none while the handle is open, and by the one fold
 * its close writes (the side file is past ACC_FOLD_AT_CLOSE). */
static void ten_thousand_recalls_of_two_memories_add_at_most_twenty_records(void **state)
{
    fx *f = *state;
    char *a = store(f->mem, "alpha note about the deploy key");
    char *b = store(f->mem, "bravo note about the deploy script");
    uint64_t before = records(f->db);
    unsigned all, folds;

    for (int i = 0; i < 10000; i++)
        recall(f->mem, "deploy note", 2, NULL);
    assert_int_equal(records(f->db), before);
    assert_int_equal(count_of(f->mem, a), 10000);
    close_mem(f);
    open_mem_with(f, NULL);
    assert_true(records(f->db) <= before + 20);
    assert_true(records(f->db) >= before + 1); /* the close folded them */
    access_records(f->db, &all, &folds);
    assert_int_equal(all, folds);
    assert_int_equal(tu_file_size(f->acc), ACC_HDR_SIZE); /* a fresh file */
    assert_int_equal(count_of(f->mem, a), 10000);
    assert_int_equal(count_of(f->mem, b), 10000);
    free(a);
    free(b);
}

/* ---- the ranking counts the side file ------------------------------------ */

static void accesses_in_the_side_file_rank_a_memory_first(void **state)
{
    fx *f = *state;
    cairn_mem_options o = CAIRN_MEM_OPTIONS_INIT;
    char top[4][CAIRN_MEM_ID_MAX + 1];
    char *older, *newer;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    uint64_t before;

    close_mem(f);
    o.w_relevance = 1.0; /* relevance ties; access decides */
    o.w_access = 1.0;
    open_mem_with(f, &o);
    older = store(f->mem, "kilo shared token");
    newer = store(f->mem, "lima shared token");
    before = records(f->db);
    recall(f->mem, "shared token", 2, top);
    assert_string_equal(top[0], older); /* a tie: the older first */
    for (int i = 0; i < 9; i++)
        recall(f->mem, "lima", 1, NULL);
    assert_int_equal(records(f->db), before); /* the counts are in ACCESS only */
    assert_int_equal(cairn_mem_recall(f->mem, "shared token", NULL, &h, &n), CAIRN_OK);
    assert_int_equal(n, 2);
    assert_string_equal(h[0].mem.id, newer);
    assert_true(fabs(h[0].access - 1.0) < 1e-12);            /* the most accessed */
    assert_true(h[1].access > 0 && h[1].access < 0.5);        /* ln 2 / ln 11 */
    assert_int_equal(h[0].mem.access_count, 11);             /* 10 before, this one */
    assert_int_equal(h[1].mem.access_count, 2);
    cairn_recall_free(h, n);
    free(older);
    free(newer);
}

/* ---- another handle ------------------------------------------------------ */

static void a_read_only_handle_of_another_db_sees_the_accesses_and_records_its_own(void **state)
{
    fx *f = *state;
    cairn_options ro = CAIRN_OPTIONS_INIT;
    cairn_db *db2 = NULL;
    cairn_mem *m2 = NULL;
    char err[CAIRN_ERRMSG_MAX] = "";
    char *a = store(f->mem, "the staging database is postgres 16");
    char *b = store(f->mem, "the staging cache is redis");
    uint64_t before = records(f->db);

    ro.read_only = 1;
    assert_int_equal(cairn_open(&db2, f->dir, &ro, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_mem_open(db2, NULL, &m2), CAIRN_OK);
    for (int i = 0; i < 5; i++)
        recall(f->mem, "postgres", 1, NULL);
    assert_int_equal(count_of(m2, a), 5); /* read by the other handle, at once */
    recall(m2, "postgres staging", 2, NULL);
    recall(m2, "postgres", 1, NULL);
    assert_int_equal(cairn_mem_access_unrecorded(m2), 0);
    assert_int_equal(count_of(f->mem, a), 7);
    assert_int_equal(count_of(f->mem, b), 1);
    assert_int_equal(count_of(m2, a), 7);
    assert_int_equal(records(f->db), before);
    cairn_mem_close(m2);
    assert_int_equal(cairn_close(db2), CAIRN_OK);
    free(a);
    free(b);
}

/* ---- folds ----------------------------------------------------------------- */

static void a_fold_writes_one_record_for_many_recalls_and_replay_agrees(void **state)
{
    fx *f = *state;
    char *a = store(f->mem, "oscar prefers tabs");
    char *b = store(f->mem, "papa prefers spaces");
    uint64_t before = records(f->db);
    unsigned all, folds;
    char *c;

    for (int i = 0; i < 100; i++)
        recall(f->mem, "prefers", 2, NULL);
    for (int i = 0; i < 20; i++)
        recall(f->mem, "tabs", 1, NULL);
    c = store(f->mem, "quebec is unrelated"); /* the write folds first */
    assert_int_equal(records(f->db), before + 2); /* the fold and the memory */
    access_records(f->db, &all, &folds);
    assert_int_equal(all, 1);
    assert_int_equal(folds, 1);
    assert_int_equal(tu_file_size(f->acc), ACC_HDR_SIZE);
    assert_int_equal(count_of(f->mem, a), 120);
    assert_int_equal(count_of(f->mem, b), 100);

    /* pending again, then a checkpoint folds them into the index file too */
    for (int i = 0; i < 7; i++)
        recall(f->mem, "tabs", 1, NULL);
    close_mem(f);
    open_mem_with(f, NULL);
    assert_int_equal(count_of(f->mem, a), 127); /* 120 replayed, 7 pending */
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    assert_int_equal(tu_file_size(f->acc), ACC_HDR_SIZE);
    access_records(f->db, &all, &folds);
    assert_int_equal(folds, 2);
    close_mem(f);
    open_mem_with(f, NULL); /* from the index file: no fold record replayed */
    assert_int_equal(count_of(f->mem, a), 127);
    assert_int_equal(count_of(f->mem, b), 100);
    assert_int_equal(count_of(f->mem, c), 0);
    free(a);
    free(b);
    free(c);
}

/* A fold of accesses to many memories is one record that weighs as many:
 * the close that folds it writes the index file holding it, so that no
 * open replays it (1,200 memories named: past the 1,000 records a close
 * waits for). */
static void a_close_writes_the_index_file_for_a_fold_of_many_accesses(void **state)
{
    fx *f = *state;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_mem_stats ms;
    cairn_stats st;
    char text[64];
    unsigned all, folds;

    for (int i = 0; i < 1200; i++) {
        snprintf(text, sizeof text, "entry %d of group grp%c", i, 'a' + i % 12);
        free(store(f->mem, text));
    }
    assert_int_equal(cairn_mem_checkpoint(f->mem), CAIRN_OK);
    ro.k = 100;
    for (int round = 0; round < 3; round++) /* 3,600 entries: past ACC_FOLD_AT_CLOSE */
        for (int g = 0; g < 12; g++) {
            cairn_recall_hit *h = NULL;
            size_t n = 0;
            snprintf(text, sizeof text, "grp%c", 'a' + g);
            assert_int_equal(cairn_mem_recall(f->mem, text, &ro, &h, &n), CAIRN_OK);
            assert_int_equal(n, 100);
            cairn_recall_free(h, n);
        }
    close_mem(f);
    open_mem_with(f, NULL);
    access_records(f->db, &all, &folds);
    assert_int_equal(folds, 1); /* the close folded them */
    assert_int_equal(cairn_stats_get(f->db, &st), CAIRN_OK);
    assert_int_equal(cairn_mem_stats_get(f->mem, &ms), CAIRN_OK);
    assert_int_equal(ms.index_seq, st.last_seq); /* and wrote the file after it */
    assert_int_equal(ms.unindexed, 0);
    cairn_mem_stats_free(&ms);
}

/* The per-recall records an earlier cairn wrote still count, beside the
 * side file's entries and folds. */
static void per_recall_records_of_an_earlier_writer_still_replay(void **state)
{
    fx *f = *state;
    char *a = store(f->mem, "romeo uses vim");
    char json[128];
    cairn_entry e;
    uint64_t seq = 0;

    snprintf(json, sizeof json, "{\"ids\":[\"%s\"],\"at\":1700000360000}", a);
    memset(&e, 0, sizeof e);
    e.type = CAIRN_REC_MEMORY_ACCESS;
    e.ns = "";
    e.json = json;
    e.json_len = strlen(json);
    for (int i = 0; i < 3; i++)
        assert_int_equal(cairn_append(f->db, &e, &seq), CAIRN_OK);
    recall(f->mem, "vim", 1, NULL);
    close_mem(f);
    open_mem_with(f, NULL);
    assert_int_equal(count_of(f->mem, a), 4);
    assert_int_equal(cairn_mem_skipped(f->mem), 0);
    free(a);
}

/* ---- damage --------------------------------------------------------------- */

static uint64_t file_id_of(const char *path)
{
    size_t len = 0;
    uint8_t *p = tu_read_file(path, &len);
    uint64_t id;
    assert_non_null(p);
    assert_true(len >= ACC_HDR_SIZE);
    id = get_le64(p + ACC_OFF_FILE_ID);
    free(p);
    return id;
}

static void append_raw(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    close(fd);
}

/* Put bytes in place of the file as a new file (a new inode: an open
 * handle sees the name move on, as after a writer's fold). */
static void replace_file(const char *path, const uint8_t *buf, size_t len)
{
    char *tmp = malloc(strlen(path) + 5);
    assert_non_null(tmp);
    sprintf(tmp, "%s.new", path);
    assert_int_equal(tu_write_file(tmp, buf, len), 0);
    assert_int_equal(rename(tmp, path), 0);
    free(tmp);
}

static void a_damaged_or_truncated_side_file_is_read_around(void **state)
{
    fx *f = *state;
    char *a = store(f->mem, "sierra deploys on fridays");
    uint8_t e[3 * ACC_ENTRY_SIZE];
    uint64_t id;
    long long size;

    for (int i = 0; i < 4; i++)
        recall(f->mem, "sierra", 1, NULL);
    id = file_id_of(f->acc);
    /* the last entry torn: 10 of its bytes gone */
    size = tu_file_size(f->acc);
    assert_int_equal(truncate(f->acc, size - 10), 0);
    /* bytes that are no entry, an entry of another file, entries whose sum
     * holds but whose values do not (seq 0, a time past 2^53) */
    append_raw(f->acc, "garbage!", 8);
    cairn__accfile_entry_encode(e, id ^ 1, 2, 5);
    cairn__accfile_entry_encode(e + ACC_ENTRY_SIZE, id, 0, 5);
    cairn__accfile_entry_encode(e + 2 * ACC_ENTRY_SIZE, id, 2, ACC_AT_MAX + 1);
    append_raw(f->acc, e, sizeof e);
    /* an entry for a memory no one has: counted nowhere */
    cairn__accfile_entry_encode(e, id, 999999, 5);
    append_raw(f->acc, e, ACC_ENTRY_SIZE);
    recall(f->mem, "sierra", 1, NULL); /* appended after the damage: found again */
    close_mem(f);
    open_mem_with(f, NULL);
    assert_int_equal(count_of(f->mem, a), 4); /* 3 whole, the torn one lost, the new one */
    /* one flipped bit in the first entry: that one is lost too */
    {
        size_t len = 0;
        uint8_t *p = tu_read_file(f->acc, &len);
        p[ACC_HDR_SIZE + 3] ^= 0x10;
        replace_file(f->acc, p, len);
        free(p);
    }
    assert_int_equal(count_of(f->mem, a), 3);
    free(a);
}

static void a_bad_header_records_nothing_until_a_writer_replaces_the_file(void **state)
{
    fx *f = *state;
    char *a = store(f->mem, "tango owns the billing service");
    size_t len = 0;
    uint8_t *p;

    for (int i = 0; i < 2; i++)
        recall(f->mem, "billing", 1, NULL);
    p = tu_read_file(f->acc, &len);
    p[20] ^= 0xff; /* the file id: the header's sum no longer holds */
    replace_file(f->acc, p, len);
    free(p);
    assert_int_equal(count_of(f->mem, a), 0); /* its entries cannot be trusted */
    recall(f->mem, "billing", 1, NULL);       /* succeeds, records nothing */
    assert_int_equal(cairn_mem_access_unrecorded(f->mem), 1);
    assert_int_equal(tu_file_size(f->acc), (long long)len);
    free(store(f->mem, "uniform is another memory")); /* the fold replaces it */
    assert_int_equal(tu_file_size(f->acc), ACC_HDR_SIZE);
    recall(f->mem, "billing", 1, NULL);
    assert_int_equal(count_of(f->mem, a), 1);
    assert_int_equal(cairn_mem_access_unrecorded(f->mem), 1);

    /* another store's file (a copy): not trusted either; its entry was
     * pending, so the count drops back to the folded 0 */
    p = tu_read_file(f->acc, &len);
    cairn__accfile_hdr_encode(p, get_le64(p + ACC_OFF_FILE_ID), (const uint8_t *)"another store!!!");
    replace_file(f->acc, p, len);
    free(p);
    assert_int_equal(count_of(f->mem, a), 0);
    recall(f->mem, "billing", 1, NULL);
    assert_int_equal(cairn_mem_access_unrecorded(f->mem), 2);
    free(a);
}

typedef struct vprob {
    unsigned n;
    uint64_t off;
    int code;
    char file[32];
    char msg[CAIRN_ERRMSG_MAX];
} vprob;

static void on_problem(void *user, const char *file, uint64_t offset, int code, const char *msg)
{
    vprob *v = user;
    if (v->n++ == 0) {
        v->off = offset;
        v->code = code;
        snprintf(v->file, sizeof v->file, "%s", file);
        snprintf(v->msg, sizeof v->msg, "%s", msg);
    }
}

/* Verify the side file of f's store: its problems in v, whether it was
 * checked in the return value. */
static int verify_access(fx *f, vprob *v, uint64_t *problems)
{
    int checked = -1;
    memset(v, 0, sizeof *v);
    assert_int_equal(cairn_mem_verify_access(f->db, on_problem, v, problems, &checked), CAIRN_OK);
    assert_int_equal(*problems, v->n);
    return checked;
}

/* verify checks the side file: a clean one passes, and damage is named
 * with the offset where it starts, whether in an entry, the header, or
 * another store's file; a torn last entry is no problem. The file is not
 * changed by it. */
static void verify_names_damage_in_the_side_file(void **state)
{
    fx *f = *state;
    char *a = store(f->mem, "victor runs the nightly backup");
    uint64_t problems = 0;
    uint8_t *p, *before, e[ACC_ENTRY_SIZE];
    size_t len = 0, blen = 0;
    vprob v;

    assert_int_equal(verify_access(f, &v, &problems), 0); /* no file yet */
    for (int i = 0; i < 5; i++)
        recall(f->mem, "backup", 1, NULL);
    assert_int_equal(verify_access(f, &v, &problems), 1);
    assert_int_equal(problems, 0);
    /* a torn last entry: a write in flight or a crash, not damage */
    cairn__accfile_entry_encode(e, file_id_of(f->acc), 2, 5);
    append_raw(f->acc, e, 10);
    assert_int_equal(verify_access(f, &v, &problems), 1);
    assert_int_equal(problems, 0);
    /* one flipped bit in the third entry */
    p = tu_read_file(f->acc, &len);
    p[ACC_HDR_SIZE + 2 * ACC_ENTRY_SIZE + 5] ^= 0x04;
    replace_file(f->acc, p, len);
    free(p);
    before = tu_read_file(f->acc, &blen);
    assert_int_equal(verify_access(f, &v, &problems), 1);
    assert_int_equal(problems, 1);
    assert_string_equal(v.file, "ACCESS");
    assert_int_equal(v.off, ACC_HDR_SIZE + 2 * ACC_ENTRY_SIZE);
    assert_int_equal(v.code, CAIRN_ECHECKSUM);
    assert_non_null(strstr(v.msg, "offset 112"));
    p = tu_read_file(f->acc, &len);
    assert_int_equal(len, blen); /* untouched */
    assert_memory_equal(p, before, len);
    /* a bad header */
    p[20] ^= 0xff;
    replace_file(f->acc, p, len);
    assert_int_equal(verify_access(f, &v, &problems), 1);
    assert_int_equal(problems, 1);
    assert_int_equal(v.off, 0);
    /* another store's file */
    memcpy(p, before, len);
    cairn__accfile_hdr_encode(p, get_le64(p + ACC_OFF_FILE_ID), (const uint8_t *)"another store!!!");
    replace_file(f->acc, p, len);
    assert_int_equal(verify_access(f, &v, &problems), 1);
    assert_int_equal(problems, 1);
    assert_non_null(strstr(v.msg, "another store"));
    free(p);
    free(before);
    /* the next fold replaces it: clean again */
    free(store(f->mem, "whiskey is another memory"));
    assert_int_equal(verify_access(f, &v, &problems), 1);
    assert_int_equal(problems, 0);
    /* not a regular file */
    assert_int_equal(unlink(f->acc), 0);
    assert_int_equal(mkdir(f->acc, 0700), 0);
    assert_int_equal(verify_access(f, &v, &problems), 1);
    assert_int_equal(problems, 1);
    assert_int_equal(rmdir(f->acc), 0);
    free(a);
}

/* A symlink planted as ACCESS is neither written through nor read; a
 * writer's fold replaces the link itself. */
static void a_planted_symlink_is_not_written_through(void **state)
{
    fx *f = *state;
    char *a = store(f->mem, "yankee signs the releases");
    char *outside = tu_join(f->dir, "../outside");
    uint8_t hdr[ACC_HDR_SIZE];
    struct stat st;

    /* a file that looks like a good ACCESS of this store, outside it */
    recall(f->mem, "releases", 1, NULL);
    {
        size_t len = 0;
        uint8_t *p = tu_read_file(f->acc, &len);
        memcpy(hdr, p, sizeof hdr);
        free(p);
    }
    assert_int_equal(tu_write_file(outside, hdr, sizeof hdr), 0);
    assert_int_equal(unlink(f->acc), 0);
    assert_int_equal(symlink(outside, f->acc), 0);
    recall(f->mem, "releases", 1, NULL);
    assert_int_equal(cairn_mem_access_unrecorded(f->mem), 1);
    assert_int_equal(tu_file_size(outside), ACC_HDR_SIZE); /* nothing written through */
    assert_int_equal(count_of(f->mem, a), 0);               /* the entry went with the file */
    free(store(f->mem, "zulu replaces the link"));
    assert_int_equal(lstat(f->acc, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(tu_file_size(outside), ACC_HDR_SIZE);
    recall(f->mem, "releases", 1, NULL);
    assert_int_equal(count_of(f->mem, a), 1);
    unlink(outside);
    free(outside);
    free(a);
}

/* ---- a recall that cannot record ------------------------------------------ */

typedef struct deny {
    const cairn_io *real;
    int err;   /* errno for opens of the side file and its temps */
    int opens; /* how many were refused */
} deny;

static int deny_openat(void *u, const char *site, int dirfd, const char *path, int flags, int mode)
{
    deny *d = u;
    if (strncmp(site, "access.", 7) == 0 && d->err != 0 &&
        ((flags & O_ACCMODE) != O_RDONLY || d->err == EACCES || d->err == ENOENT)) {
        d->opens++;
        errno = d->err;
        return -1;
    }
    return d->real->openat(d->real->user, site, dirfd, path, flags, mode);
}

/* A side file verify cannot read (no permission) is an error, never
 * "verified"; one removed meanwhile is as if there were none. */
static void verify_says_when_it_could_not_read_the_side_file(void **state)
{
    fx *f = *state;
    const cairn_io *r = cairn_io_default();
    deny d = {r, 0, 0};
    cairn_io io = *r;
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    char *a = store(f->mem, "xray owns the release train");
    uint64_t problems = 9;
    int checked = 9;

    recall(f->mem, "release", 1, NULL);
    close_mem(f);
    io.openat = deny_openat;
    io.user = &d;
    o.read_only = 1;
    o.io = &io;
    assert_int_equal(cairn_open(&f->db, f->dir, &o, err, sizeof err), CAIRN_OK);
    d.err = EACCES;
    assert_int_equal(cairn_mem_verify_access(f->db, NULL, NULL, &problems, &checked), CAIRN_EPERM);
    assert_non_null(strstr(cairn_errmsg(f->db), "ACCESS"));
    d.err = ENOENT;
    assert_int_equal(cairn_mem_verify_access(f->db, NULL, NULL, &problems, &checked), CAIRN_OK);
    assert_int_equal(problems, 0);
    assert_int_equal(checked, 0);
    d.err = 0;
    assert_int_equal(cairn_mem_verify_access(f->db, NULL, NULL, &problems, &checked), CAIRN_OK);
    assert_int_equal(problems, 0);
    assert_int_equal(checked, 1);
    assert_int_equal(cairn_close(f->db), CAIRN_OK);
    f->db = NULL;
    free(a);
}

static void a_recall_that_cannot_record_still_succeeds(void **state)
{
    fx *f = *state;
    const cairn_io *r = cairn_io_default();
    deny d = {r, 0, 0};
    cairn_io io = *r;
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    char *a = store(f->mem, "victor reviews every pull request");
    int codes[2] = {EROFS, EACCES};

    close_mem(f);
    io.openat = deny_openat;
    io.user = &d;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_NONE;
    o.io = &io;
    for (int k = 0; k < 2; k++) {
        uint64_t before;
        assert_int_equal(cairn_open(&f->db, f->dir, &o, err, sizeof err), CAIRN_OK);
        assert_int_equal(cairn_mem_open(f->db, NULL, &f->mem), CAIRN_OK);
        before = records(f->db);
        d.err = codes[k];
        recall(f->mem, "pull request", 1, NULL);
        recall(f->mem, "pull request", 1, NULL);
        assert_true(d.opens > 0);
        assert_int_equal(cairn_mem_access_unrecorded(f->mem), 2);
        assert_int_equal(records(f->db), before);
        d.err = 0;
        recall(f->mem, "pull request", 1, NULL); /* writable again */
        assert_int_equal(cairn_mem_access_unrecorded(f->mem), 2);
        assert_int_equal(count_of(f->mem, a), (uint64_t)k + 1);
        close_mem(f);
    }
    open_mem_with(f, NULL);
    free(a);
}

/* ---- processes ------------------------------------------------------------- */

/* Readers in other processes recall while this writer stores (each store
 * folds: the file is replaced under them): every access they made is
 * counted once, none lost at a replacement, none twice. */
static void processes_recalling_through_folds_lose_no_access(void **state)
{
    enum { NPROC = 4, ROUNDS = 2000 };
    fx *f = *state;
    char *a = store(f->mem, "whiskey is the release branch");
    char *b = store(f->mem, "xray is the release train");
    pid_t kids[NPROC];
    int status, stores = 0;

    assert_int_equal(cairn_sync(f->db), CAIRN_OK); /* the readers see both memories */
    for (int p = 0; p < NPROC; p++) {
        kids[p] = fork();
        assert_true(kids[p] >= 0);
        if (kids[p] == 0) {
            cairn_options ro = CAIRN_OPTIONS_INIT;
            cairn_db *db = NULL;
            cairn_mem *m = NULL;
            char err[CAIRN_ERRMSG_MAX];
            int bad = 0;
            ro.read_only = 1;
            ro.background = 0;
            if (cairn_open(&db, f->dir, &ro, err, sizeof err) != CAIRN_OK ||
                cairn_mem_open(db, NULL, &m) != CAIRN_OK)
                _exit(2);
            for (int i = 0; i < ROUNDS; i++) {
                cairn_recall_hit *h = NULL;
                size_t n = 0;
                int rc = cairn_mem_recall(m, "release", NULL, &h, &n);
                if (rc != CAIRN_OK || n != 2) {
                    if (!bad)
                        fprintf(stderr, "child %d: recall %d: %s, %zu hits\n", p, i,
                                cairn_strerror(rc), n);
                    bad |= 1;
                }
                cairn_recall_free(h, n);
            }
            if (cairn_mem_access_unrecorded(m) != 0) {
                fprintf(stderr, "child %d: %llu accesses not recorded\n", p,
                        (unsigned long long)cairn_mem_access_unrecorded(m));
                bad |= 2;
            }
            cairn_mem_close(m);
            cairn_close(db);
            _exit(bad);
        }
    }
    for (int done = 0; done < NPROC;) {
        char text[64];
        pid_t w = waitpid(-1, &status, WNOHANG);
        if (w > 0) {
            assert_true(WIFEXITED(status));
            assert_int_equal(WEXITSTATUS(status), 0);
            done++;
            continue;
        }
        snprintf(text, sizeof text, "yankee note number %d", stores++);
        free(store(f->mem, text));
        usleep(500);
    }
    free(store(f->mem, "zulu: the last fold"));
    assert_true(stores > 1);
    assert_int_equal(tu_file_size(f->acc), ACC_HDR_SIZE);
    assert_int_equal(count_of(f->mem, a), NPROC * ROUNDS);
    assert_int_equal(count_of(f->mem, b), NPROC * ROUNDS);
    close_mem(f);
    open_mem_with(f, NULL);
    assert_int_equal(count_of(f->mem, a), NPROC * ROUNDS);
    free(a);
    free(b);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(a_recall_appends_no_record_and_one_entry_per_hit),
        T(ten_thousand_recalls_of_two_memories_add_at_most_twenty_records),
        T(accesses_in_the_side_file_rank_a_memory_first),
        T(a_read_only_handle_of_another_db_sees_the_accesses_and_records_its_own),
        T(a_fold_writes_one_record_for_many_recalls_and_replay_agrees),
        T(a_close_writes_the_index_file_for_a_fold_of_many_accesses),
        T(per_recall_records_of_an_earlier_writer_still_replay),
        T(a_damaged_or_truncated_side_file_is_read_around),
        T(verify_names_damage_in_the_side_file),
        T(verify_says_when_it_could_not_read_the_side_file),
        T(a_bad_header_records_nothing_until_a_writer_replaces_the_file),
        T(a_planted_symlink_is_not_written_through),
        T(a_recall_that_cannot_record_still_succeeds),
        T(processes_recalling_through_folds_lose_no_access),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
