/*
 * test_rgen.c - graph generations (format-spec/graph.md, "Generations"):
 * a close writes what changed as a generation and leaves the whole graph
 * file alone; an open folds the chain back into exactly the state a
 * rebuild from the log gives (the whole file written from each is the
 * same, byte for byte); a damaged generation is reported by verify, set
 * aside and costs only a replay; the chain stays short and the whole file
 * is rewritten only now and then.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn.h"
#include "rstate.h"
#include "store.h"
#include "testutil.h"

typedef struct fx {
    char *root, *dir;
    cairn_db *db;
    cairn_reflex *r;
    uint64_t rng;
} fx;

static void open_all(fx *f)
{
    char err[CAIRN_ERRMSG_MAX] = "";
    if (tu_open_small(f->dir, 0, &f->db, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_reflex_open(f->db, &f->r), CAIRN_OK);
}

static void close_all(fx *f)
{
    cairn_reflex_close(f->r);
    f->r = NULL;
    assert_int_equal(cairn_close(f->db), CAIRN_OK);
    f->db = NULL;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (f == NULL || (f->root = tu_mkdtemp("rgen")) == NULL)
        return -1;
    f->dir = tu_join(f->root, "store");
    f->rng = 0x5EED;
    open_all(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    if (f->r != NULL)
        close_all(f);
    tu_rmrf(f->root);
    free(f->root);
    free(f->dir);
    free(f);
    return 0;
}

/* Graph files of one suffix in dir: how many, and the last name seen. */
static int count_files(const char *dir, const char *suffix, char *last, size_t cap)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name), sl = strlen(suffix);
        if (strncmp(de->d_name, "graph-", 6) == 0 && l > sl &&
            strcmp(de->d_name + l - sl, suffix) == 0) {
            n++;
            if (last != NULL && strcmp(de->d_name, last) > 0)
                snprintf(last, cap, "%s", de->d_name);
        }
    }
    closedir(d);
    return n;
}

/* How many files of a kind (MAN_FILE_*) the MANIFEST lists. */
static size_t listed(const char *dir, uint8_t kind)
{
    manifest m;
    cairn__err e;
    size_t n = 0;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dirfd >= 0);
    assert_int_equal(cairn__manifest_read(cairn_io_default(), dirfd, NULL, &m, &e), CAIRN_OK);
    assert_int_equal(m.version, 9);
    for (size_t i = 0; i < m.n_files; i++)
        n += m.files[i].kind == kind;
    cairn__manifest_free(NULL, &m);
    close(dirfd);
    return n;
}

static void label(char *out, unsigned i)
{
    sprintf(out, "step %05u of the plan", i);
}

/* n changes in batches of 100: nodes of 0..hi (new or counted again, with
 * an episode now and then), edges between nodes below lo (new or seen
 * again), a pattern now and then. */
static void changes(fx *f, unsigned n, unsigned lo, unsigned hi)
{
    enum { B = 100 };
    cairn_causal_op ops[B];
    char labels[B][40], src[B][CAIRN_NODE_ID_MAX + 1], dst[B][CAIRN_NODE_ID_MAX + 1];
    for (unsigned done = 0; done < n; done += B) {
        for (unsigned k = 0; k < B; k++) {
            uint64_t x = tu_splitmix64(&f->rng);
            memset(&ops[k], 0, sizeof ops[k]);
            if (x % 3 != 0 || lo < 2) {
                label(labels[k], (unsigned)((x >> 8) % hi));
                ops[k].type = CAIRN_NODE_EVENT;
                ops[k].label = labels[k];
                ops[k].episode = x % 7 == 0 ? "episode-gen" : NULL;
            } else {
                char a[40], b[40];
                label(a, (unsigned)((x >> 8) % lo));
                label(b, (unsigned)((x >> 24) % lo));
                assert_int_equal(cairn_causal_node_id(f->r, a, src[k]), CAIRN_OK);
                assert_int_equal(cairn_causal_node_id(f->r, b, dst[k]), CAIRN_OK);
                ops[k].is_edge = 1;
                ops[k].type = (unsigned)(x >> 40) % CAIRN_EDGE_TYPES;
                ops[k].source = src[k];
                ops[k].target = dst[k];
                ops[k].weight = (double)((x >> 48) % 101) / 100.0;
            }
        }
        assert_int_equal(cairn_causal_add_batch(f->r, ops, B), CAIRN_OK);
        if ((done / B) % 5 == 0) {
            cairn_pattern_spec p = {CAIRN_PATTERN_SPEC_VERSION, "retry", "a flaky test", "run it again", NULL, 0.5, NULL};
            char name[32];
            sprintf(name, "pattern %u", (unsigned)(tu_splitmix64(&f->rng) % 20));
            p.name = name;
            assert_int_equal(cairn_pattern_add(f->r, &p, NULL), CAIRN_OK);
        }
    }
}

/* Nodes 0..n-1, so that edges may join any of them. */
static void seed_nodes(fx *f, unsigned n)
{
    enum { B = 500 };
    cairn_causal_op ops[B];
    static char labels[B][40];
    for (unsigned at = 0; at < n; at += B) {
        unsigned k = 0;
        for (; k < B && at + k < n; k++) {
            memset(&ops[k], 0, sizeof ops[k]);
            label(labels[k], at + k);
            ops[k].type = CAIRN_NODE_EVENT;
            ops[k].label = labels[k];
        }
        assert_int_equal(cairn_causal_add_batch(f->r, ops, k), CAIRN_OK);
    }
}

/* The whole graph file a checkpoint writes from the state of dir: its
 * bytes are a function of the state alone. */
static uint8_t *whole_of(fx *f, size_t *len)
{
    char name[64] = "";
    char *path;
    uint8_t *b;
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    assert_int_equal(count_files(f->dir, ".cgg", NULL, 0), 0);
    assert_int_equal(count_files(f->dir, ".cgx", name, sizeof name), 1);
    path = tu_join(f->dir, name);
    b = tu_read_file(path, len);
    free(path);
    assert_non_null(b);
    return b;
}

/* The state f has, against the state a copy rebuilds from its log alone. */
static void same_as_rebuild(fx *f)
{
    fx g = *f;
    uint8_t *a, *b;
    size_t la, lb;
    DIR *d;
    struct dirent *de;

    close_all(f);
    g.dir = tu_join(f->root, "rebuilt");
    tu_rmrf(g.dir);
    assert_int_equal(tu_copy_dir(f->dir, g.dir), 0);
    d = opendir(g.dir);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, "graph-", 6) == 0) {
            char *p = tu_join(g.dir, de->d_name);
            assert_int_equal(unlink(p), 0);
            free(p);
        }
    closedir(d);
    open_all(f);
    a = whole_of(f, &la);
    open_all(&g);
    cairn_reflex_status st;
    assert_int_equal(cairn_reflex_status_get(g.r, &st), CAIRN_OK);
    assert_string_equal(st.graph_file, "");
    b = whole_of(&g, &lb);
    close_all(&g);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
    tu_rmrf(g.dir);
    free(g.dir);
}

static const char *EP =
    "{\"session\":\"2026-01-01-session-1\",\"task\":\"Fix the router\",\"outcome\":\"success\","
    "\"timestamp\":\"2026-01-01T10:00:00Z\","
    "\"decisions\":[{\"id\":\"d001\",\"timestamp\":\"2026-01-01T10:05:00Z\",\"type\":\"design\","
    "\"context\":\"Routing\",\"chosen\":\"step 00007 of the plan\",\"rationale\":\"latency\","
    "\"outcome\":\"success\",\"effects\":[\"e001\"]}],"
    "\"events\":[{\"id\":\"e001\",\"timestamp\":\"2026-01-01T10:40:00Z\",\"type\":\"error\","
    "\"content\":\"Build broke\",\"caused_by\":[],\"leads_to\":[]}],"
    "\"lessons\":[\"Test first\"],\"metrics\":{\"commits\":2}}";

static void test_a_close_writes_a_generation_not_the_whole_file(void **state)
{
    fx *f = *state;
    cairn_causal_update_stats us;
    char *gpath;
    char whole[64] = "", again[64] = "", gen[64] = "";
    cairn_reflex_status st;
    uint8_t *before, *after;
    size_t lb, la;
    char *path;

    seed_nodes(f, 3000);
    changes(f, 6000, 3000, 3000);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    assert_int_equal(count_files(f->dir, ".cgx", whole, sizeof whole), 1);
    path = tu_join(f->dir, whole);
    before = tu_read_file(path, &lb);
    assert_non_null(before);

    /* Base rows counted again, new nodes, edges new and seen again, an
     * episode and its update. */
    changes(f, 1200, 3000, 3400);
    assert_int_equal(cairn_episode_put(f->r, EP, strlen(EP), 0, NULL), CAIRN_OK);
    assert_int_equal(cairn_causal_update(f->r, NULL, &us), CAIRN_OK);
    close_all(f);
    assert_int_equal(count_files(f->dir, ".cgg", gen, sizeof gen), 1);
    assert_int_equal(count_files(f->dir, ".cgx", again, sizeof again), 1);
    assert_string_equal(again, whole);
    after = tu_read_file(path, &la);
    assert_int_equal(la, lb);
    assert_memory_equal(after, before, la); /* the whole file untouched */
    gpath = tu_join(f->dir, gen);
    assert_true(tu_file_size(gpath) * 4 < (long long)lb);
    free(gpath);

    open_all(f);
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_string_equal(st.graph_file, gen);
    assert_int_equal(st.delta_records, 0); /* nothing replayed from the log */
    changes(f, 1200, 3000, 3800);
    close_all(f);
    open_all(f);
    changes(f, 1100, 3000, 4000);
    close_all(f);
    assert_in_range(count_files(f->dir, ".cgg", NULL, 0), 1, RG_CHAIN_MAX - 1);
    open_all(f);
    same_as_rebuild(f);
    free(before);
    free(after);
    free(path);
}

/* A handle with background threads (a merger). */
static void open_bg(fx *f)
{
    char err[CAIRN_ERRMSG_MAX] = "";
    if (tu_open_small(f->dir, 1, &f->db, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_reflex_open(f->db, &f->r), CAIRN_OK);
}

/* With background threads a close never writes the whole file while the
 * generations hold less than half its rows: handles closed at once (before
 * their merger starts) write generations; a handle that stays open has
 * its merger fold the chain into one whole file, and its close then
 * writes only what changed since. */
/* A whole file, then background handles closed at once (before their
 * merger starts) until a whole merge is due: the closes wrote generations
 * and left the whole file (its name in whole). */
static void make_a_merge_due(fx *f, char *whole, size_t cap)
{
    char now[64] = "";
    int due = 0, rounds = 0;

    seed_nodes(f, 2000);
    changes(f, 2000, 2000, 2000);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    assert_int_equal(count_files(f->dir, ".cgx", whole, cap), 1);
    close_all(f);
    while (!due && rounds < 20) {
        open_bg(f);
        changes(f, 1000, 2000, 2100 + 100 * (unsigned)rounds);
        close_all(f);
        rounds++;
        open_all(f);
        due = cairn__rg_merge_due(f->r);
        close_all(f);
    }
    assert_true(due);
    assert_int_equal(count_files(f->dir, ".cgx", now, sizeof now), 1);
    assert_string_equal(now, whole); /* no close wrote it */
    assert_true(count_files(f->dir, ".cgg", NULL, 0) >= 1);
}

static void test_a_merger_writes_the_whole_file_in_the_background(void **state)
{
    fx *f = *state;
    char whole[64] = "", now[64] = "", merged[64] = "";
    cairn_reflex_status st;
    uint64_t nodes, edges;
    long long t0;

    make_a_merge_due(f, whole, sizeof whole);
    open_bg(f);
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    nodes = st.nodes;
    edges = st.edges;
    t0 = tu_now_ms();
    while (count_files(f->dir, ".cgg", NULL, 0) > 0 && tu_now_ms() - t0 < 10000)
        tu_sleep_ms(10);
    assert_int_equal(count_files(f->dir, ".cgg", NULL, 0), 0);
    assert_int_equal(count_files(f->dir, ".cgx", merged, sizeof merged), 1);
    assert_string_not_equal(merged, whole);
    /* listed in place of the file and the generations it merged */
    assert_int_equal(listed(f->dir, MAN_FILE_GRAPH), 1);
    assert_int_equal(listed(f->dir, MAN_FILE_GRAPHGEN), 0);
    /* the handle reads on (its files unlinked, still mapped) */
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_int_equal(st.nodes, nodes);
    assert_int_equal(st.edges, edges);
    changes(f, 1000, 2000, 2400);
    close_all(f);
    /* the close read the merged file and wrote what changed since it */
    assert_int_equal(count_files(f->dir, ".cgx", now, sizeof now), 1);
    assert_string_equal(now, merged);
    assert_int_equal(count_files(f->dir, ".cgg", NULL, 0), 1);
    assert_int_equal(listed(f->dir, MAN_FILE_GRAPH), 1);
    assert_int_equal(listed(f->dir, MAN_FILE_GRAPHGEN), 1);
    open_all(f);
    same_as_rebuild(f);
}

/* Closes around the moment the merger starts (half a second after the
 * open): each gives the merge up or lets it end, leaves no temp file, and
 * the store keeps the state its log gives. */
static void test_a_close_during_a_merge_loses_nothing(void **state)
{
    fx *f = *state;
    char whole[64] = "";

    make_a_merge_due(f, whole, sizeof whole);
    for (int i = 0; i < 3; i++) {
        open_bg(f);
        tu_sleep_ms(480 + 30 * i);
        close_all(f);
        assert_int_equal(count_files(f->dir, ".cgx", NULL, 0), 1);
        assert_int_equal(count_files(f->dir, ".tmp", NULL, 0), 0);
    }
    open_all(f);
    same_as_rebuild(f);
}

/* A whole file of about 9,000 rows and a session on it, closed: the path
 * of the one generation, its name in gen. */
static char *closed_with_a_generation(fx *f, char *gen, size_t cap)
{
    seed_nodes(f, 3000);
    changes(f, 6000, 3000, 3000);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    changes(f, 1200, 3000, 3300);
    close_all(f);
    assert_int_equal(count_files(f->dir, ".cgg", gen, cap), 1);
    return tu_join(f->dir, gen);
}

static void test_a_damaged_generation_is_set_aside(void **state)
{
    fx *f = *state;
    char gen[64] = "";
    uint64_t problems = 0;
    int checked = 0;
    uint8_t *b;
    size_t len;
    char *path;

    path = closed_with_a_generation(f, gen, sizeof gen);
    b = tu_read_file(path, &len);
    assert_non_null(b);
    b[len / 2] ^= 0x20;
    assert_int_equal(tu_write_file(path, b, len), 0);

    /* Verify before any reflexion handle opens (a writer's would set the
     * file aside). */
    char err[CAIRN_ERRMSG_MAX];
    assert_int_equal(tu_open_small(f->dir, 0, &f->db, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_reflex_verify(f->db, NULL, NULL, &problems, &checked), CAIRN_OK);
    assert_int_equal(problems, 1);
    assert_int_equal(checked, 2);
    assert_int_equal(cairn_close(f->db), CAIRN_OK);
    /* The writer's open set it aside: rebuilt from the log, nothing lost. */
    open_all(f);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(cairn_reflex_verify(f->db, NULL, NULL, &problems, &checked), CAIRN_OK);
    assert_int_equal(problems, 0);
    same_as_rebuild(f);
    free(b);
    free(path);
}

static void test_the_chain_stays_short_and_the_whole_file_is_rare(void **state)
{
    fx *f = *state;
    char whole[64] = "", now[64];
    int rewrites = 0, leading_gens = 0;

    seed_nodes(f, 4000);
    changes(f, 16000, 4000, 4000);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    assert_int_equal(count_files(f->dir, ".cgx", whole, sizeof whole), 1);
    close_all(f);
    for (unsigned round = 0; round < 24; round++) {
        open_all(f);
        changes(f, 1000, 4000, 4100 + 100 * round);
        close_all(f);
        now[0] = 0;
        assert_int_equal(count_files(f->dir, ".cgx", now, sizeof now), 1);
        assert_in_range(count_files(f->dir, ".cgg", NULL, 0), 0, RG_CHAIN_MAX - 1);
        if (strcmp(now, whole) != 0) {
            rewrites++;
            assert_int_equal(count_files(f->dir, ".cgg", NULL, 0), 0);
            strcpy(whole, now);
        } else {
            leading_gens += (int)round == leading_gens;
            assert_true(count_files(f->dir, ".cgg", NULL, 0) >= 1);
        }
    }
    /* A whole file is written once the changes since the last reach a
     * quarter of its rows (about 10,000 here): not at the first two
     * closes of 1,000 changes, then now and then, not at every close. */
    fprintf(stderr, "whole rewrites %d, leading closes with a generation only %d\n", rewrites,
            leading_gens);
    assert_true(leading_gens >= 2);
    assert_in_range(rewrites, 1, 12);
    open_all(f);
    same_as_rebuild(f);
}

/* A generation whose sums hold but whose rows break the format (an
 * episode name past CAIRN_LABEL_MAX) is set aside like any damage: the
 * open uses the whole file and the log. */
static void test_a_generation_past_the_limits_is_set_aside(void **state)
{
    fx *f = *state;
    static char longname[CAIRN_LABEL_MAX + 1];
    char gen[64] = "";
    gi_str nm = {longname, sizeof longname};
    uint64_t off;
    gg_head hd;
    gg_in in;
    cairn__err e;
    uint8_t *b;
    size_t len;
    char *path;

    path = closed_with_a_generation(f, gen, sizeof gen);
    b = tu_read_file(path, &len);
    assert_int_equal(cairn__gg_parse(b, len, gen, &hd, NULL, NULL, &off, &e), CAIRN_OK);
    free(b);
    /* The same head, one name too long, written with good sums. */
    memset(longname, 'x', sizeof longname);
    memset(&in, 0, sizeof in);
    in.head = hd;
    memset(in.head.count, 0, sizeof in.head.count);
    in.head.count[GG_NAMES] = 1;
    in.names = &nm;
    open_all(f);
    assert_int_equal(cairn__gg_write(f->db->io, f->db->dirfd, &in, NULL, &e), CAIRN_OK);
    assert_int_equal(tu_relist(f->dir), 0); /* listed as it is: past the list's check */
    cairn_reflex_close(f->r);
    assert_int_equal(cairn_reflex_open(f->db, &f->r), CAIRN_OK); /* a writer: removes it */
    assert_int_equal(access(path, F_OK), -1);
    same_as_rebuild(f);
    free(path);
}

/* The replay applies an episode whose id is "" and a pattern whose name is
 * "" (a raw record may say so): a generation holds them, and the open
 * folds it. */
static void test_empty_names_fold_back(void **state)
{
    fx *f = *state;
    static const char *const raw[2] = {
        "{\"id\":\"\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"outcome\":\"success\"}",
        "{\"name\":\"\",\"trigger\":\"t\",\"action\":\"a\",\"success_rate\":0.5}"};
    static const uint16_t type[2] = {CAIRN_REC_EPISODE, CAIRN_REC_PATTERN};
    char gen[64] = "";
    uint64_t problems = 1;
    int checked = 0;
    cairn_reflex_status st;

    seed_nodes(f, 3000);
    changes(f, 6000, 3000, 3000);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    for (int i = 0; i < 2; i++) {
        cairn_entry en;
        memset(&en, 0, sizeof en);
        en.type = type[i];
        en.json = raw[i];
        en.json_len = strlen(raw[i]);
        assert_int_equal(cairn_append(f->db, &en, NULL), CAIRN_OK);
    }
    changes(f, 1200, 3000, 3300);
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_int_equal(st.skipped, 0); /* both applied */
    close_all(f);
    assert_int_equal(count_files(f->dir, ".cgg", gen, sizeof gen), 1);
    char err[CAIRN_ERRMSG_MAX];
    assert_int_equal(tu_open_small(f->dir, 0, &f->db, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_reflex_verify(f->db, NULL, NULL, &problems, &checked), CAIRN_OK);
    assert_int_equal(problems, 0);
    assert_int_equal(checked, 2);
    assert_int_equal(cairn_reflex_open(f->db, &f->r), CAIRN_OK);
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_string_equal(st.graph_file, gen);
    same_as_rebuild(f);
}

/* Two handles (as two processes would) on one store, each writing at its
 * close what it changed: the later one's generation lies on the file it
 * loaded and holds the other's changes too; a whole file another handle
 * wrote makes the close write a whole file. */
static void test_two_writers_take_turns_with_their_files(void **state)
{
    fx *f = *state, g;
    char name[64] = "";

    seed_nodes(f, 8000);
    changes(f, 9000, 8000, 8000); /* about 11,000 rows: two sessions stay under a quarter */
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    g = *f;
    g.rng = 0xB0B;
    open_all(&g); /* both hold the whole file */
    changes(f, 1000, 8000, 8300);
    close_all(f);
    assert_int_equal(count_files(f->dir, ".cgg", NULL, 0), 1);
    changes(&g, 1000, 8000, 8400);
    close_all(&g); /* on the whole file it loaded, with f's changes in */
    assert_int_equal(count_files(f->dir, ".cgg", name, sizeof name), 1);
    open_all(f);
    cairn_reflex_status st;
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_string_equal(st.graph_file, name);
    assert_int_equal(st.delta_records, 0);
    same_as_rebuild(f); /* leaves f open on a whole file */

    open_all(&g);
    changes(f, 1000, 8000, 8400);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK); /* a newer whole file under g */
    assert_int_equal(count_files(f->dir, ".cgg", NULL, 0), 0);
    assert_int_equal(count_files(f->dir, ".cgx", name, sizeof name), 1);
    changes(&g, 1000, 8000, 8500);
    close_all(&g);
    /* g read the newer whole file and wrote what changed since it, with
     * its own changes, as a generation on it */
    assert_int_equal(count_files(f->dir, ".cgg", NULL, 0), 1);
    {
        char after[64] = "";
        assert_int_equal(count_files(f->dir, ".cgx", after, sizeof after), 1);
        assert_string_equal(after, name);
    }
    same_as_rebuild(f);
}

/* ---- faults ---- */

/* Fails the n-th call at a "graphgen." site (0: none) with err; counts them. */
typedef struct faulty {
    int n, calls, err;
    int write_at; /* the number of the data write among the calls */
    const cairn_io *real;
} faulty;

static int hit(const char *site)
{
    extern faulty g_faulty;
    /* the generation's calls, and the MANIFEST's that lists it */
    if (strncmp(site, "graphgen.", 9) != 0 &&
        (strncmp(site, "manifest.", 9) != 0 || strcmp(site, "manifest.close") == 0))
        return 0;
    if (++g_faulty.calls != g_faulty.n)
        return 0;
    errno = g_faulty.err;
    return 1;
}

faulty g_faulty;

static int f_open(void *u, const char *site, const char *path, int flags, int mode)
{
    (void)u;
    return hit(site) ? -1 : g_faulty.real->open(g_faulty.real->user, site, path, flags, mode);
}
static int f_openat(void *u, const char *site, int dirfd, const char *path, int flags, int mode)
{
    (void)u;
    return hit(site) ? -1
                     : g_faulty.real->openat(g_faulty.real->user, site, dirfd, path, flags, mode);
}
static int f_close(void *u, const char *site, int fd)
{
    (void)u;
    int rc = g_faulty.real->close(g_faulty.real->user, site, fd);
    return hit(site) ? -1 : rc; /* the descriptor is gone either way */
}
static ssize_t f_pread(void *u, const char *site, int fd, void *buf, size_t len, off_t off)
{
    (void)u;
    return hit(site) ? -1 : g_faulty.real->pread(g_faulty.real->user, site, fd, buf, len, off);
}
static ssize_t f_pwrite(void *u, const char *site, int fd, const void *buf, size_t len, off_t off)
{
    int fail = hit(site);
    (void)u;
    if (strncmp(site, "graphgen.", 9) == 0)
        g_faulty.write_at = g_faulty.calls;
    return fail ? -1 : g_faulty.real->pwrite(g_faulty.real->user, site, fd, buf, len, off);
}
static int f_fsync(void *u, const char *site, int fd)
{
    (void)u;
    return hit(site) ? -1 : g_faulty.real->fsync(g_faulty.real->user, site, fd);
}
static int f_fdatasync(void *u, const char *site, int fd)
{
    (void)u;
    return hit(site) ? -1 : g_faulty.real->fdatasync(g_faulty.real->user, site, fd);
}
static int f_ftruncate(void *u, const char *site, int fd, off_t len)
{
    (void)u;
    return hit(site) ? -1 : g_faulty.real->ftruncate(g_faulty.real->user, site, fd, len);
}
static int f_renameat(void *u, const char *site, int dirfd, const char *from, const char *to)
{
    (void)u;
    return hit(site) ? -1 : g_faulty.real->renameat(g_faulty.real->user, site, dirfd, from, to);
}
static int f_unlinkat(void *u, const char *site, int dirfd, const char *path)
{
    (void)u;
    return hit(site) ? -1 : g_faulty.real->unlinkat(g_faulty.real->user, site, dirfd, path);
}

/* A close that writes a generation, with its n-th I/O call failing. */
static void close_with_fault(fx *f, int n, int err)
{
    static cairn_io io;
    cairn_options o = CAIRN_OPTIONS_INIT;
    char msg[CAIRN_ERRMSG_MAX] = "";
    io = (cairn_io){f_open, f_openat, f_close, f_pread, f_pwrite, f_fsync, f_fdatasync,
                    f_ftruncate, f_renameat, f_unlinkat, NULL, NULL};
    g_faulty.real = cairn_io_default();
    g_faulty.n = 0; /* the opens first, without faults */
    g_faulty.err = err;
    o.background = 0;
    o.segment_size = 1 << 20;
    o.io = &io;
    if (cairn_open(&f->db, f->dir, &o, msg, sizeof msg) != CAIRN_OK)
        fail_msg("cairn_open: %s", msg);
    assert_int_equal(cairn_reflex_open(f->db, &f->r), CAIRN_OK);
    g_faulty.n = n;
    g_faulty.calls = 0;
    changes(f, 1200, 3000, 3300);
    cairn_reflex_close(f->r); /* a failed write is reported by cairn_close, or costs a replay */
    f->r = NULL;
    (void)cairn_close(f->db);
    f->db = NULL;
}

static void test_a_failed_generation_write_loses_nothing(void **state)
{
    fx *f = *state;
    char *base = tu_join(f->root, "base");
    int total, write_at;

    seed_nodes(f, 3000);
    changes(f, 6000, 3000, 3000);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    close_all(f);
    assert_int_equal(tu_copy_dir(f->dir, base), 0);
    close_with_fault(f, 0, 0); /* the count */
    total = g_faulty.calls;
    write_at = g_faulty.write_at;
    assert_true(write_at > 1); /* after the create */
    /* create, write, fsync, close, rename, dirsync; its header read back;
     * the MANIFEST's open, write, fsync, rename, dirsync; the close's reads
     * of the list */
    assert_in_range(total, 10, 40);
    assert_int_equal(count_files(f->dir, ".cgg", NULL, 0), 1);
    /* Each call fails with EIO; the data write with ENOSPC too (a full disk). */
    for (int err = 0; err < 2; err++)
        for (int n = err ? write_at : 1; n <= (err ? write_at : total); n++) {
            f->rng = 0x5EED; /* the same changes each time */
            tu_rmrf(f->dir);
            assert_int_equal(tu_copy_dir(base, f->dir), 0);
            close_with_fault(f, n, err ? ENOSPC : EIO);
            assert_true(g_faulty.calls >= n); /* the fault was met */
            open_all(f); /* a writer: removes a temp file left, and a file not listed */
            assert_int_equal(count_files(f->dir, ".cgg.tmp", NULL, 0), 0);
            assert_int_equal(count_files(f->dir, ".cgg", NULL, 0),
                             (int)listed(f->dir, MAN_FILE_GRAPHGEN));
            same_as_rebuild(f);
            close_all(f);
        }
    open_all(f);
    tu_rmrf(base);
    free(base);
}

int main(void)
{
    /* Hundreds of fsyncs of small files: in memory unless TMPDIR says
     * where (nothing here depends on the file system). */
    if (getenv("TMPDIR") == NULL && access("/dev/shm", W_OK) == 0)
        setenv("TMPDIR", "/dev/shm", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_close_writes_a_generation_not_the_whole_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_damaged_generation_is_set_aside, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_merger_writes_the_whole_file_in_the_background,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_close_during_a_merge_loses_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_the_chain_stays_short_and_the_whole_file_is_rare,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_writers_take_turns_with_their_files, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_generation_past_the_limits_is_set_aside, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_empty_names_fold_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_generation_write_loses_nothing, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
