/*
 * test_logbind.c - derived files (the memory index, the graph file) are
 * bound to the exact log they were folded from (engine/log/logbind.c,
 * format-spec/README.md "Binding of derived files"), and the log notices
 * whole records lost at its tail (MANIFEST synced_seq).
 *
 * The scenarios cut the active segment exactly at a record boundary (what a
 * scan cannot tell from a clean end), copy another store's file in, take a
 * sealed segment away; the property test cuts at random boundaries after
 * random checkpoints and compares every answer with a store rebuilt from
 * the same log without any derived file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "bytes.h"
#include "cairn.h"
#include "cairn_sys.h"
#include "filehdr.h"
#include "memindex.h"
#include "testutil.h"

typedef struct fx {
    char *parent, *dir;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->parent = tu_mkdtemp("logbind");
    f->dir = tu_join(f->parent, "store");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    tu_rmrf(f->parent);
    free(f->parent);
    free(f->dir);
    free(f);
    return 0;
}

/* Losses here are made by cutting files, not by power: the syncs of every
 * checkpoint only cost time (the property test takes hundreds). */
static int no_sync(void *user, const char *site, int fd)
{
    (void)user, (void)site, (void)fd;
    return 0;
}

/* With no_seal set, a seal cannot open its .seg.tmp: closed segments stay
 * in log form (what a crash before the seal leaves). */
static int no_seal;
static int open_at(void *user, const char *site, int dirfd, const char *path, int flags, int mode)
{
    (void)user;
    if (no_seal && strcmp(site, "seal.open") == 0) {
        errno = EIO;
        return -1;
    }
    return openat(dirfd, path, flags, mode);
}

static cairn_db *open_db_sized(const char *dir, int read_only, uint64_t segment_size)
{
    static cairn_io io;
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db = NULL;
    io = *cairn_io_default();
    io.fsync = no_sync;
    io.fdatasync = no_sync;
    io.openat = open_at;
    o.io = &io;
    o.segment_size = segment_size;
    o.create = !read_only;
    o.read_only = read_only;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_NONE;
    if (cairn_open(&db, dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open %s: %s", dir, err);
    return db;
}

static cairn_db *open_db(const char *dir, int read_only)
{
    return open_db_sized(dir, read_only, 0);
}

static cairn_mem *open_mem(cairn_db *db)
{
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    cairn_mem *m = NULL;
    mo.w_relevance = 1.0; /* rankings that do not move with time or access */
    assert_int_equal(cairn_mem_open(db, &mo, &m), CAIRN_OK);
    return m;
}

/* Cut the active segment of dir exactly where the record `seq` starts. */
static void cut_at_seq(const char *dir, uint64_t seq)
{
    char *path = tu_find_last(dir, ".log");
    size_t len, off = 64;
    uint8_t *b;
    assert_non_null(path);
    b = tu_read_file(path, &len);
    assert_non_null(b);
    while (off + 16 <= len && get_le64(b + off + 8) != seq)
        off += get_le32(b + off);
    if (off + 16 > len)
        fail_msg("no record %" PRIu64 " in %s", seq, path);
    assert_int_equal(truncate(path, (off_t)off), 0);
    free(b);
    free(path);
}

typedef struct problems {
    int n;
    char last[CAIRN_ERRMSG_MAX];
    char file[64];
    uint64_t off;
} problems;

static void note_problem(void *user, const char *file, uint64_t off, int code, const char *msg)
{
    problems *p = user;
    (void)code;
    p->n++;
    snprintf(p->last, sizeof p->last, "%s", msg);
    snprintf(p->file, sizeof p->file, "%s", file);
    p->off = off;
}

/* Every problem verify finds: the log, the memory index, the graph file. */
static int verify_all(cairn_db *db, problems *p)
{
    uint64_t n = 0, total = 0;
    memset(p, 0, sizeof *p);
    assert_int_equal(cairn_verify(db, note_problem, p, &n), CAIRN_OK);
    total += n;
    assert_int_equal(cairn_mem_verify_index(db, note_problem, p, &n, NULL), CAIRN_OK);
    total += n;
    assert_int_equal(cairn_reflex_verify(db, note_problem, p, &n, NULL), CAIRN_OK);
    total += n;
    assert_int_equal((int)total, p->n);
    return p->n;
}

static size_t recall_n(cairn_mem *m, const char *query, char ids[][CAIRN_MEM_ID_MAX + 1],
                       size_t cap)
{
    cairn_recall_opts o = CAIRN_RECALL_OPTS_INIT;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    o.k = cap;
    o.mode = CAIRN_RECALL_LEXICAL;
    assert_int_equal(cairn_mem_recall(m, query, &o, &h, &n), CAIRN_OK);
    for (size_t i = 0; i < n; i++)
        strcpy(ids[i], h[i].mem.id);
    cairn_recall_free(h, n);
    return n;
}

/* The scenario as a user met it: ten memories, a checkpoint, the segment
 * cut at the start of record 6, eight new memories. Before, the new ones
 * took seqs 6..13, the file was taken as covering them: recall found the
 * cut memories and get missed the new ones, and verify said ok. */
static void a_cut_tail_after_a_checkpoint_is_noticed_and_never_reused(void **state)
{
    fx *f = *state;
    char alpha[10][CAIRN_MEM_ID_MAX + 1], bravo[8][CAIRN_MEM_ID_MAX + 1];
    char got[20][CAIRN_MEM_ID_MAX + 1];
    cairn_db *db = open_db(f->dir, 0);
    cairn_mem *m = open_mem(db);
    cairn_mem_stats ms;
    cairn_stats st;
    problems p;
    char text[64];

    for (int i = 0; i < 10; i++) {
        cairn_memory *x = NULL;
        snprintf(text, sizeof text, "alpha memory A%d", i + 1);
        assert_int_equal(cairn_mem_store(m, text, NULL, &x, NULL), CAIRN_OK);
        strcpy(alpha[i], x->id);
        cairn_mem_free(x);
    }
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    cut_at_seq(f->dir, 6);

    /* A reader: the loss is a verify problem, and stats names it. */
    db = open_db(f->dir, 1);
    assert_int_equal(verify_all(db, &p), 1);
    assert_non_null(strstr(p.last, "records 6..10 are lost"));
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.recovered_lost_first, 6);
    assert_int_equal(st.recovered_lost_last, 10);
    assert_int_equal(cairn_close(db), CAIRN_OK);

    /* A writer retires 6..10: the next record is 11. */
    db = open_db(f->dir, 0);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.recovered_lost_first, 6);
    assert_int_equal(st.recovered_lost_last, 10);
    /* and removed the index file folded over the lost records */
    {
        char *stale = tu_join(f->dir, "mem-000000000000000a.cmx");
        assert_int_equal(tu_file_size(stale), -1);
        free(stale);
    }
    m = open_mem(db);
    assert_int_equal(cairn_mem_stats_get(m, &ms), CAIRN_OK);
    assert_int_equal(ms.index_rows, 0);
    cairn_mem_stats_free(&ms);
    for (int i = 0; i < 8; i++) {
        cairn_memory *x = NULL;
        snprintf(text, sizeof text, "bravo memory B%d", i + 1);
        assert_int_equal(cairn_mem_store(m, text, NULL, &x, NULL), CAIRN_OK);
        strcpy(bravo[i], x->id);
        cairn_mem_free(x);
    }
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.last_seq, 18);
    assert_int_equal(st.records, 13);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);

    db = open_db(f->dir, 1);
    m = open_mem(db);
    assert_int_equal(recall_n(m, "alpha", got, 20), 5);
    for (int i = 0; i < 5; i++) {
        int found = 0;
        for (int j = 0; j < 5; j++)
            found |= strcmp(got[i], alpha[j]) == 0;
        assert_true(found); /* A1..A5 only */
    }
    for (int i = 0; i < 10; i++) {
        cairn_memory *x = NULL;
        assert_int_equal(cairn_mem_get(m, alpha[i], &x), i < 5 ? CAIRN_OK : CAIRN_ENOTFOUND);
        cairn_mem_free(x);
    }
    for (int i = 0; i < 8; i++) {
        cairn_memory *x = NULL;
        assert_int_equal(cairn_mem_get(m, bravo[i], &x), CAIRN_OK);
        cairn_mem_free(x);
    }
    cairn_mem_close(m);
    /* The writer's close replaced the stale file: verify is clean. */
    assert_int_equal(verify_all(db, &p), 0);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void store_texts(const char *dir, const char *word, int n)
{
    cairn_db *db = open_db(dir, 0);
    cairn_mem *m = open_mem(db);
    char text[64];
    for (int i = 0; i < n; i++) {
        snprintf(text, sizeof text, "%s memory %d", word, i);
        assert_int_equal(cairn_mem_store(m, text, NULL, NULL, NULL), CAIRN_OK);
    }
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static char *only_file(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char *found = NULL;
    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0 &&
            strstr(de->d_name, ".tmp") == NULL) {
            assert_null(found);
            found = strdup(de->d_name);
        }
    closedir(d);
    return found;
}

/* Two stores whose index files cover the same seq: one copied into the
 * other (same name) is another store's, never used, and verify says so. */
static void another_stores_index_file_is_not_used(void **state)
{
    fx *f = *state;
    char *other = tu_join(f->parent, "other"), *name, *src, *dst;
    char got[8][CAIRN_MEM_ID_MAX + 1];
    cairn_mem_stats ms;
    problems p;
    size_t len;
    uint8_t *b;
    cairn_db *db;
    cairn_mem *m;

    store_texts(f->dir, "delta", 3);
    store_texts(other, "charlie", 3);
    name = only_file(other, "mem-");
    assert_non_null(name);
    src = tu_join(other, name);
    dst = tu_join(f->dir, name);
    assert_true(tu_file_size(dst) > 0); /* the same name: both cover seq 3 */
    b = tu_read_file(src, &len);
    assert_int_equal(tu_write_file(dst, b, len), 0);
    /* listed as it is (as a store of a MANIFEST before the list adopts its
     * files): past the list's check, the binding's */
    assert_int_equal(tu_relist(f->dir), 0);

    db = open_db(f->dir, 1);
    assert_int_equal(verify_all(db, &p), 1);
    assert_non_null(strstr(p.last, "another store"));
    m = open_mem(db);
    assert_int_equal(cairn_mem_stats_get(m, &ms), CAIRN_OK);
    assert_non_null(strstr(ms.index_note, "another store"));
    cairn_mem_stats_free(&ms);
    assert_int_equal(recall_n(m, "charlie", got, 8), 0);
    assert_int_equal(recall_n(m, "delta", got, 8), 3);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    free(b);
    free(src);
    free(dst);
    free(name);
    free(other);
}

static void add_node(cairn_reflex *r, const char *label, char *id)
{
    cairn_causal_node n;
    memset(&n, 0, sizeof n);
    assert_int_equal(cairn_causal_add_node(r, CAIRN_NODE_DECISION, label, NULL, &n), CAIRN_OK);
    strcpy(id, n.id);
    cairn_causal_node_clear(&n);
}

static int path_found(cairn_reflex *r, const char *from, const char *to)
{
    cairn_causal_path p;
    int found;
    memset(&p, 0, sizeof p);
    assert_int_equal(cairn_causal_path_find(r, from, to, 0, &p), CAIRN_OK);
    found = p.found;
    cairn_causal_path_clear(&p);
    return found;
}

/* The graph file likewise: node 4 and what follows cut after a checkpoint
 * are gone from every answer, and new nodes are found. */
static void a_cut_tail_after_a_graph_checkpoint_is_not_answered_from_the_file(void **state)
{
    fx *f = *state;
    char id[6][CAIRN_NODE_ID_MAX + 1], label[32], nid[CAIRN_NODE_ID_MAX + 1];
    cairn_db *db = open_db(f->dir, 0);
    cairn_reflex *r = NULL;
    cairn_causal_node n;
    problems p;

    assert_int_equal(cairn_reflex_open(db, &r), CAIRN_OK);
    /* node 1 (seq 1), node 2, edge 1-2, node 3, edge 2-3, node 4 (seq 6), ... */
    for (int i = 0; i < 6; i++) {
        snprintf(label, sizeof label, "alpha node %d", i + 1);
        add_node(r, label, id[i]);
        if (i > 0)
            assert_int_equal(cairn_causal_add_edge(r, id[i - 1], id[i], CAIRN_EDGE_CAUSES, 1.0,
                                                   NULL, NULL),
                             CAIRN_OK);
    }
    assert_true(path_found(r, "alpha node 1", "alpha node 5"));
    assert_int_equal(cairn_reflex_checkpoint(r), CAIRN_OK);
    cairn_reflex_close(r);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    cut_at_seq(f->dir, 6); /* node 4 and after */

    db = open_db(f->dir, 0);
    assert_int_equal(cairn_reflex_open(db, &r), CAIRN_OK);
    add_node(r, "bravo node 1", nid);
    assert_true(path_found(r, "alpha node 1", "alpha node 3"));
    assert_false(path_found(r, "alpha node 1", "alpha node 5"));
    memset(&n, 0, sizeof n);
    assert_int_equal(cairn_causal_get_node(r, id[4], &n), CAIRN_ENOTFOUND);
    assert_int_equal(cairn_causal_get_node(r, nid, &n), CAIRN_OK);
    cairn_causal_node_clear(&n);
    cairn_reflex_close(r);
    assert_int_equal(cairn_close(db), CAIRN_OK);

    /* A reopen reads the same from the file the writer left. */
    db = open_db(f->dir, 1);
    assert_int_equal(cairn_reflex_open(db, &r), CAIRN_OK);
    assert_false(path_found(r, "alpha node 1", "alpha node 5"));
    assert_int_equal(cairn_causal_get_node(r, nid, &n), CAIRN_OK);
    cairn_causal_node_clear(&n);
    cairn_reflex_close(r);
    assert_int_equal(verify_all(db, &p), 0);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* ---- the property: random cuts agree with a rebuild from the log ------- */

#define PROP_ROUNDS 24
#define PROP_MAX_MEM 40

typedef struct answers {
    char recall[4][PROP_MAX_MEM][CAIRN_MEM_ID_MAX + 1];
    size_t nrecall[4];
    int get[2 * PROP_MAX_MEM];
    int path[4];
} answers;

static const char *const prop_words[] = {"deploy", "cache", "review", "token", "parser"};
static const char *const prop_queries[4] = {"deploy", "cache review", "token", "parser deploy"};

static int cmp_id(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void answer(const char *dir, char ids[][CAIRN_MEM_ID_MAX + 1], size_t nids, answers *a)
{
    static const char *const from[4] = {"node 0", "node 1", "node 2", "node 0"};
    static const char *const to[4] = {"node 3", "node 5", "node 7", "node 9"};
    cairn_db *db = open_db(dir, 1);
    cairn_mem *m = open_mem(db);
    cairn_reflex *r = NULL;

    memset(a, 0, sizeof *a);
    for (int q = 0; q < 4; q++) {
        a->nrecall[q] = recall_n(m, prop_queries[q], a->recall[q], PROP_MAX_MEM);
        /* equal scores may come in either order: compare the sets */
        qsort(a->recall[q], a->nrecall[q], sizeof a->recall[q][0], cmp_id);
    }
    for (size_t i = 0; i < nids; i++) {
        cairn_memory *x = NULL;
        a->get[i] = cairn_mem_get(m, ids[i], &x);
        cairn_mem_free(x);
    }
    assert_int_equal(cairn_reflex_open(db, &r), CAIRN_OK);
    for (int q = 0; q < 4; q++)
        a->path[q] = path_found(r, from[q], to[q]);
    cairn_reflex_close(r);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* Cut a log-form segment of dir, the active one or a closed one (its seal
 * failed), at a random record boundary; returns the seq cut at. */
static uint64_t cut_random_log(const char *dir, uint64_t *rs)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char *logs[64];
    size_t nlogs = 0, len, off = 64, k, nrec = 0;
    uint8_t *b;
    char *path;
    uint64_t base, seq;

    assert_non_null(d);
    while ((de = readdir(d)) != NULL && nlogs < 64) {
        size_t n = strlen(de->d_name);
        if (n == 20 && strcmp(de->d_name + 16, ".log") == 0)
            logs[nlogs++] = strdup(de->d_name);
    }
    closedir(d);
    assert_true(nlogs > 0);
    path = tu_join(dir, logs[tu_splitmix64(rs) % nlogs]);
    for (size_t i = 0; i < nlogs; i++)
        free(logs[i]);
    b = tu_read_file(path, &len);
    assert_non_null(b);
    base = get_le64(b + 32);
    while (off + 4 <= len && get_le32(b + off) != 0) {
        off += get_le32(b + off);
        nrec++;
    }
    if (nrec == 0) { /* an empty active segment: nothing to cut */
        free(b);
        free(path);
        return 0;
    }
    k = (size_t)(tu_splitmix64(rs) % nrec);
    off = 64;
    for (size_t i = 0; i < k; i++)
        off += get_le32(b + off);
    seq = base + k;
    assert_int_equal(truncate(path, (off_t)off), 0);
    free(b);
    free(path);
    return seq;
}

/* A copy of the store without any derived file: state from the log alone. */
static void copy_log_only(const char *src, const char *dst)
{
    DIR *d = opendir(src);
    struct dirent *de;
    assert_non_null(d);
    assert_int_equal(mkdir(dst, 0755), 0);
    while ((de = readdir(d)) != NULL) {
        char *a, *b;
        uint8_t *buf;
        size_t len;
        if (de->d_name[0] == '.' || strncmp(de->d_name, "mem-", 4) == 0 ||
            strncmp(de->d_name, "graph-", 6) == 0)
            continue;
        a = tu_join(src, de->d_name);
        b = tu_join(dst, de->d_name);
        buf = tu_read_file(a, &len);
        assert_non_null(buf);
        assert_int_equal(tu_write_file(b, buf, len), 0);
        free(buf);
        free(a);
        free(b);
    }
    closedir(d);
}

static void random_history(const char *dir, uint64_t *rs, char ids[][CAIRN_MEM_ID_MAX + 1],
                           size_t *nids, int *nodes, uint64_t segment_size)
{
    cairn_db *db = open_db_sized(dir, 0, segment_size);
    cairn_mem *m = open_mem(db);
    cairn_reflex *r = NULL;
    static char node_ids[64][CAIRN_NODE_ID_MAX + 1]; /* across both passes of a round */
    int ops = 10 + (int)(tu_splitmix64(rs) % 30);

    assert_int_equal(cairn_reflex_open(db, &r), CAIRN_OK);
    for (int i = 0; i < ops; i++) {
        uint64_t k = tu_splitmix64(rs) % 10;
        char text[96];
        if (k < 5 && *nids < PROP_MAX_MEM) {
            cairn_memory *x = NULL;
            snprintf(text, sizeof text, "%s %s note %zu", prop_words[tu_splitmix64(rs) % 5],
                     prop_words[tu_splitmix64(rs) % 5], *nids);
            assert_int_equal(cairn_mem_store(m, text, NULL, &x, NULL), CAIRN_OK);
            strcpy(ids[(*nids)++], x->id);
            cairn_mem_free(x);
        } else if (k == 5 && *nids > 0) {
            int rc = cairn_mem_delete(m, ids[tu_splitmix64(rs) % *nids], "test");
            assert_true(rc == CAIRN_OK || rc == CAIRN_ENOTFOUND);
        } else if (k < 8 && *nodes < 64) {
            snprintf(text, sizeof text, "node %d", *nodes);
            add_node(r, text, node_ids[*nodes]);
            if (*nodes > 0) {
                /* the source may be a node the cut took away */
                int rc = cairn_causal_add_edge(r, node_ids[tu_splitmix64(rs) % *nodes],
                                               node_ids[*nodes], CAIRN_EDGE_CAUSES, 1.0, NULL,
                                               NULL);
                assert_true(rc == CAIRN_OK || rc == CAIRN_ENOTFOUND);
            }
            (*nodes)++;
        } else if (k == 8) {
            assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK);
        } else {
            assert_int_equal(cairn_reflex_checkpoint(r), CAIRN_OK);
        }
    }
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK);
    assert_int_equal(cairn_reflex_checkpoint(r), CAIRN_OK);
    cairn_reflex_close(r);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void random_cuts_agree_with_a_store_rebuilt_from_the_log(void **state)
{
    fx *f = *state;
    uint64_t rs = 0x5eed17;
    static char ids[2 * PROP_MAX_MEM][CAIRN_MEM_ID_MAX + 1];
    static answers got, want;

    for (int round = 0; round < PROP_ROUNDS; round++) {
        char tag[32], *dir, *rebuilt;
        size_t nids = 0;
        int nodes = 0;
        cairn_stats st;
        cairn_db *db;
        problems p;
        uint64_t cut;

        /* Rounds 0, 1 (mod 4): one 64 MiB segment, cut in it. Rounds 2, 3:
         * 4 KiB segments whose seals fail, so closed segments stay in log
         * form, and the cut lands in any of them. */
        uint64_t segsize = round % 4 < 2 ? 0 : 4096;
        snprintf(tag, sizeof tag, "round-%d", round);
        dir = tu_join(f->parent, tag);
        snprintf(tag, sizeof tag, "rebuilt-%d", round);
        rebuilt = tu_join(f->parent, tag);
        no_seal = segsize != 0;
        random_history(dir, &rs, ids, &nids, &nodes, segsize);
        db = open_db(dir, 1);
        assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
        assert_int_equal(cairn_close(db), CAIRN_OK);
        if (segsize == 0) {
            cut = 2 + tu_splitmix64(&rs) % (st.last_seq - 1); /* 2..last */
            cut_at_seq(dir, cut);
        } else {
            cut = cut_random_log(dir, &rs);
        }
        /* Before any writer: the loss is reported (every history ends with
         * checkpoints covering the last record). */
        db = open_db(dir, 1);
        if (cut != 0 && verify_all(db, &p) == 0)
            fail_msg("round %d (cut at %" PRIu64 "): verify saw nothing", round, cut);
        assert_int_equal(cairn_close(db), CAIRN_OK);
        /* Half the rounds write more on top: the cut numbers must not be
         * given again, and the stale files must not answer for them. */
        if (round % 2 == 0)
            random_history(dir, &rs, ids, &nids, &nodes, segsize);
        else
            cairn_close(open_db(dir, 0)); /* a writer's open retires the numbers */
        no_seal = 0;
        copy_log_only(dir, rebuilt);
        answer(dir, ids, nids, &got);
        answer(rebuilt, ids, nids, &want);
        for (int q = 0; q < 4; q++) {
            assert_int_equal(got.nrecall[q], want.nrecall[q]);
            for (size_t i = 0; i < got.nrecall[q]; i++)
                assert_string_equal(got.recall[q][i], want.recall[q][i]);
            assert_int_equal(got.path[q], want.path[q]);
        }
        for (size_t i = 0; i < nids; i++)
            assert_int_equal(got.get[i], want.get[i]);
        /* and after a writer has been there, verify is clean */
        db = open_db(dir, 1);
        if (verify_all(db, &p) != 0)
            fail_msg("round %d (cut at %" PRIu64 "): %s: %s", round, cut, p.file, p.last);
        assert_int_equal(cairn_close(db), CAIRN_OK);
        tu_rmrf(dir);
        tu_rmrf(rebuilt);
        free(dir);
        free(rebuilt);
    }
}

/* ---- the rest of the log's side ----------------------------------------- */

/* A sealed segment the MANIFEST names is gone: the store is damaged, and
 * the error names the file; it is never "no store" (CAIRN_ENOTFOUND). */
static void a_missing_sealed_segment_is_named_not_no_store(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "", *path;
    const char *seg;
    cairn_db *db = NULL;

    assert_int_equal(tu_open_small(f->dir, 0, &db, err, sizeof err), CAIRN_OK);
    for (int i = 0; i < 200; i++) {
        cairn_entry e = {CAIRN_REC_EVENT, NULL, 0, "{\"pad\":\"0123456789abcdef0123456789\"}",
                         36, NULL, 0};
        assert_int_equal(cairn_append(db, &e, NULL), CAIRN_OK);
    }
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    path = tu_find_last(f->dir, ".seg");
    assert_non_null(path);
    seg = strrchr(path, '/') + 1;
    assert_int_equal(unlink(path), 0);
    for (int ro = 0; ro < 2; ro++) {
        o.read_only = ro;
        o.background = 0;
        err[0] = 0;
        assert_int_equal(cairn_open(&db, f->dir, &o, err, sizeof err), CAIRN_ECORRUPT);
        assert_non_null(strstr(err, seg));
        assert_non_null(strstr(err, "missing"));
    }
    free(path);
}

/* verify names the byte offset of a damaged row, not offset 0. */
static void verify_names_the_offset_of_a_damaged_index_row(void **state)
{
    fx *f = *state;
    char *name, *path;
    uint8_t *b;
    size_t len;
    uint64_t n_ns, tcap, rows, want;
    problems p;
    cairn_db *db;

    store_texts(f->dir, "row", 20);
    name = only_file(f->dir, "mem-");
    path = tu_join(f->dir, name);
    b = tu_read_file(path, &len);
    n_ns = get_le32(b + 64);
    tcap = get_le64(b + 96);
    rows = MX_HEAD_LEN + 64 * n_ns + 2 * tcap * 8; /* format-spec/memindex.md */
    want = rows + 5 * 80;
    b[want + 8] ^= 1; /* row 5's importance, under its row sum */
    assert_int_equal(tu_write_file(path, b, len), 0);
    db = open_db(f->dir, 1);
    assert_int_equal(verify_all(db, &p), 1);
    assert_string_equal(p.file, name);
    assert_int_equal(p.off, want);
    assert_non_null(strstr(p.last, "row 5"));
    assert_int_equal(cairn_close(db), CAIRN_OK);
    free(b);
    free(path);
    free(name);
}

/* A store whose MANIFEST is of version 1 has no id until a writer opens
 * it; the writer writes the newest version with a fresh id, and keeps it. */
static void a_version_1_store_gets_an_id_from_its_first_writer(void **state)
{
    fx *f = *state;
    static const uint8_t zero[16];
    char *path = tu_join(f->dir, "MANIFEST");
    uint8_t *b, *v1, id[16];
    size_t len;
    cairn_stats st;
    cairn_db *db = open_db(f->dir, 0);

    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_memory_not_equal(st.store_id, zero, 16);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    b = tu_read_file(path, &len);
    /* the same MANIFEST as version 1 wrote it: no store block */
    v1 = tu_manifest_as_version(b, len, 1, &len);
    assert_int_equal(tu_write_file(path, v1, len), 0);
    db = open_db(f->dir, 1);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_memory_equal(st.store_id, zero, 16);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_db(f->dir, 0);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_memory_not_equal(st.store_id, zero, 16);
    memcpy(id, st.store_id, 16);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    free(b);
    b = tu_read_file(path, &len);
    assert_int_equal(get_le16(b + 8), MAN_VERSION);
    assert_memory_equal(b + 64, id, 16);
    assert_int_equal(get_le64(b + 96), 10000); /* the limit a version 1 store had */
    db = open_db(f->dir, 0);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_memory_equal(st.store_id, id, 16);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    free(b);
    free(v1);
    free(path);
}


/* Cut a closed segment (still in log form: its seal failed) at a record
 * boundary below synced_seq. Its entry says more records than it holds,
 * the anchor is intact in a later segment: the loss is found from the
 * MANIFEST, and no answer comes from the file folded over it. */
static void records_cut_from_a_closed_segment_are_lost_not_answered(void **state)
{
    fx *f = *state;
    char ids[40][CAIRN_MEM_ID_MAX + 1], got[40][CAIRN_MEM_ID_MAX + 1], *path;
    cairn_db *db;
    cairn_mem *m;
    cairn_stats st;
    problems p;
    char text[64];
    size_t len, off = 64, n = 0;
    uint8_t *b;

    no_seal = 1;
    db = open_db_sized(f->dir, 0, 4096);
    m = open_mem(db);
    for (int i = 0; i < 40; i++) {
        cairn_memory *x = NULL;
        snprintf(text, sizeof text, "gamma memory %d with some padding to fill segments", i);
        assert_int_equal(cairn_mem_store(m, text, NULL, &x, NULL), CAIRN_OK);
        strcpy(ids[i], x->id);
        cairn_mem_free(x);
    }
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK);
    cairn_mem_close(m);
    cairn_close(db); /* its close tries the seals again: they fail */
    no_seal = 0;
    /* cut segment 1 (closed) after its third record */
    path = tu_join(f->dir, "0000000000000001.log");
    b = tu_read_file(path, &len);
    assert_non_null(b);
    while (n < 3) {
        off += get_le32(b + off);
        n++;
    }
    assert_true(off < len);
    assert_int_equal(truncate(path, (off_t)off), 0);

    /* a reader: the loss is named (its memories cannot be read past it:
     * the iterator reports the short segment) */
    db = open_db(f->dir, 1);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.recovered_lost_first, 4);
    assert_true(verify_all(db, &p) >= 1);
    assert_int_equal(cairn_close(db), CAIRN_OK);

    db = open_db(f->dir, 0); /* retires them, counts them, removes the file */
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.recovered_lost_first, 4);
    assert_int_equal(st.lost_total, st.recovered_lost_last - 3);
    assert_null(only_file(f->dir, "mem-"));
    m = open_mem(db);
    for (int i = 0; i < 40; i++) {
        cairn_memory *x = NULL;
        int rc = cairn_mem_get(m, ids[i], &x);
        cairn_mem_free(x);
        if (i >= 3 && (uint64_t)i + 1 <= st.recovered_lost_last)
            assert_int_equal(rc, CAIRN_ENOTFOUND); /* lost: never answered from the file */
        else
            assert_int_equal(rc, CAIRN_OK);
    }
    assert_int_equal(recall_n(m, "gamma", got, 40), 40 - st.lost_total);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_db(f->dir, 1);
    assert_int_equal(verify_all(db, &p), 0);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_true(st.lost_total > 0); /* the MANIFEST keeps the count */
    assert_int_equal(cairn_close(db), CAIRN_OK);
    free(b);
    free(path);
}

/* Damage in the sealed block that holds the anchor record is the log's:
 * the index file is still used (sealed records never change), never
 * removed, and memories work as before, but for those whose store records
 * were in the block: their content is in the log alone, so a call that
 * needs it says which memory and seq does not read. */
static void a_damaged_anchor_block_in_a_sealed_segment_keeps_the_index(void **state)
{
    fx *f = *state;
    char got[60][CAIRN_MEM_ID_MAX + 1], *name, *seg = NULL;
    cairn_db *db = open_db_sized(f->dir, 0, 4096);
    cairn_mem *m = open_mem(db);
    cairn_mem_stats ms;
    char text[64];
    size_t len;
    uint8_t *b;

    for (int i = 0; i < 30; i++) {
        snprintf(text, sizeof text, "delta memory %d with padding to fill segments", i);
        assert_int_equal(cairn_mem_store(m, text, NULL, NULL, NULL), CAIRN_OK);
    }
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK); /* anchor: record 30 */
    assert_int_equal(cairn_roll(db), CAIRN_OK);        /* its segment ends there */
    for (int i = 30; i < 50; i++) {
        snprintf(text, sizeof text, "delta memory %d with padding to fill segments", i);
        assert_int_equal(cairn_mem_store(m, text, NULL, NULL, NULL), CAIRN_OK);
    }
    assert_int_equal(cairn_seal(db), CAIRN_OK);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    name = only_file(f->dir, "mem-");
    assert_non_null(name);
    /* the sealed segment holding record 30: the one whose base is <= 30 */
    db = open_db(f->dir, 1);
    {
        cairn_record *r = NULL;
        assert_int_equal(cairn_get(db, 30, &r), CAIRN_OK);
        cairn_record_free(db, r);
    }
    assert_int_equal(cairn_close(db), CAIRN_OK);
    for (int id = 1; id < 64 && seg == NULL; id++) {
        char fn[32], *pth;
        uint8_t *h;
        size_t hl;
        snprintf(fn, sizeof fn, "%016x.seg", id);
        pth = tu_join(f->dir, fn);
        h = tu_read_file(pth, &hl);
        /* header: base_seq at 32; the next segment's base is past 30 */
        if (h != NULL && get_le64(h + 32) <= 30) {
            char fn2[32], *p2;
            uint8_t *h2;
            size_t l2;
            snprintf(fn2, sizeof fn2, "%016x.seg", id + 1);
            p2 = tu_join(f->dir, fn2);
            h2 = tu_read_file(p2, &l2);
            if (h2 == NULL || get_le64(h2 + 32) > 30)
                seg = strdup(pth);
            free(h2);
            free(p2);
        }
        free(h);
        free(pth);
    }
    assert_non_null(seg);
    b = tu_read_file(seg, &len);
    b[100] ^= 0xff; /* in its first (only) block */
    assert_int_equal(tu_write_file(seg, b, len), 0);
    free(b);

    db = open_db(f->dir, 0);
    m = open_mem(db);
    assert_int_equal(cairn_mem_stats_get(m, &ms), CAIRN_OK);
    assert_string_equal(ms.index_note, "");
    assert_true(ms.index_rows >= 30);
    cairn_mem_stats_free(&ms);
    assert_int_equal(cairn_mem_store(m, "delta memory after the damage", NULL, NULL, NULL),
                     CAIRN_OK);
    assert_int_equal(recall_n(m, "damage", got, 60), 1); /* what reads, is found */
    {
        cairn_recall_opts o = CAIRN_RECALL_OPTS_INIT;
        cairn_recall_hit *h = NULL;
        size_t n = 0;
        int rc;
        o.k = 60;
        o.mode = CAIRN_RECALL_LEXICAL;
        rc = cairn_mem_recall(m, "delta", &o, &h, &n);
        assert_true(rc == CAIRN_ECHECKSUM || rc == CAIRN_ECORRUPT);
        assert_non_null(strstr(cairn_mem_errmsg(m), "does not read"));
        assert_null(h);
    }
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    {
        char *still = only_file(f->dir, "mem-");
        assert_non_null(still); /* never removed for the log's damage */
        free(still);
    }
    free(seg);
    free(name);
}

/* Damage with valid records after it (set aside by the writer) after a
 * checkpoint: those records are set aside, not "lost"; the lost range, if
 * any, starts after them. And cairn_sync after the roll past them returns
 * (it waited for numbers no record holds). */
static void records_set_aside_are_not_reported_lost(void **state)
{
    fx *f = *state;
    char *path;
    cairn_db *db = open_db(f->dir, 0);
    cairn_mem *m = open_mem(db);
    cairn_stats st;
    char text[64];
    size_t len, off = 64;
    uint8_t *b;

    for (int i = 0; i < 10; i++) {
        snprintf(text, sizeof text, "epsilon memory %d", i);
        assert_int_equal(cairn_mem_store(m, text, NULL, NULL, NULL), CAIRN_OK);
    }
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    path = tu_find_last(f->dir, ".log");
    b = tu_read_file(path, &len);
    for (int i = 0; i < 5; i++)
        off += get_le32(b + off);
    b[off + 40] ^= 0xff; /* inside record 6 */
    assert_int_equal(tu_write_file(path, b, len), 0);
    free(b);
    free(path);
    db = open_db(f->dir, 0);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_true(st.recovered_set_aside_bytes > 0);
    assert_int_equal(st.recovered_lost_first, 0); /* 6..10 are in the .damaged file */
    assert_int_equal(st.recovered_lost_last, 0);
    assert_int_equal(cairn_sync(db), CAIRN_OK);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* A MANIFEST write that fails while recording synced_seq (a full disk)
 * fails the checkpoint but leaves the handle usable. */
static int fail_manifest;
static ssize_t pwrite_maybe(void *user, const char *site, int fd, const void *buf, size_t len,
                            off_t off)
{
    (void)user;
    if (fail_manifest && strcmp(site, "manifest.write") == 0) {
        errno = ENOSPC;
        return -1;
    }
    return pwrite(fd, buf, len, off);
}

static void a_failed_synced_seq_write_leaves_the_handle_usable(void **state)
{
    fx *f = *state;
    cairn_io io = *cairn_io_default();
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db = NULL;
    cairn_mem *m;

    io.pwrite = pwrite_maybe;
    o.io = &io;
    o.create = 1;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_NONE;
    assert_int_equal(cairn_open(&db, f->dir, &o, err, sizeof err), CAIRN_OK);
    m = open_mem(db);
    assert_int_equal(cairn_mem_store(m, "zeta one", NULL, NULL, NULL), CAIRN_OK);
    fail_manifest = 1;
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_EFULL);
    fail_manifest = 0;
    assert_int_equal(cairn_mem_store(m, "zeta two", NULL, NULL, NULL), CAIRN_OK);
    assert_int_equal(cairn_mem_checkpoint(m), CAIRN_OK);
    cairn_mem_close(m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(a_cut_tail_after_a_checkpoint_is_noticed_and_never_reused),
        T(another_stores_index_file_is_not_used),
        T(a_cut_tail_after_a_graph_checkpoint_is_not_answered_from_the_file),
        T(random_cuts_agree_with_a_store_rebuilt_from_the_log),
        T(a_missing_sealed_segment_is_named_not_no_store),
        T(verify_names_the_offset_of_a_damaged_index_row),
        T(a_version_1_store_gets_an_id_from_its_first_writer),
        T(records_cut_from_a_closed_segment_are_lost_not_answered),
        T(a_damaged_anchor_block_in_a_sealed_segment_keeps_the_index),
        T(records_set_aside_are_not_reported_lost),
        T(a_failed_synced_seq_write_leaves_the_handle_usable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
