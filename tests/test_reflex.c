/*
 * test_reflex.c - reflexion: node and edge dedup with running averages,
 * paths (found, not found, depth limit, cycles, through the graph file and
 * the RAM delta), patterns and anti-patterns, episodes (validation, get,
 * list, decisions, replace with force), causal update (idempotent), the
 * causal-graph import, persistence across reopen and sealing, and the
 * deterministic rebuild: drop the graph file, rebuild from the log, same
 * bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include <pthread.h>

#include "cairn.h"
#include "rstate.h"
#include "store.h"
#include "testutil.h"

typedef struct fx {
    char *dir;
    cairn_db *db;
    cairn_reflex *r;
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

static void reopen(fx *f)
{
    close_all(f);
    open_all(f);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    char *d = tu_mkdtemp("reflex");
    if (f == NULL || d == NULL)
        return -1;
    f->dir = tu_join(d, "store");
    free(d);
    open_all(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    if (f->r != NULL || f->db != NULL)
        close_all(f);
    tu_rmrf(f->dir);
    *strrchr(f->dir, '/') = 0; /* and the directory made for it */
    rmdir(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void node(fx *f, unsigned type, const char *label, const char *ep, char *id)
{
    cairn_causal_node n;
    if (cairn_causal_add_node(f->r, type, label, ep, &n) != CAIRN_OK)
        fail_msg("add node %s: %s", label, cairn_reflex_errmsg(f->r));
    if (id != NULL)
        strcpy(id, n.id);
    cairn_causal_node_clear(&n);
}

static void edge(fx *f, const char *a, const char *b, double w)
{
    if (cairn_causal_add_edge(f->r, a, b, CAIRN_EDGE_CAUSES, w, NULL, NULL) != CAIRN_OK)
        fail_msg("add edge: %s", cairn_reflex_errmsg(f->r));
}

static void test_node_dedup(void **state)
{
    fx *f = *state;
    cairn_causal_node n, m;
    char other[CAIRN_NODE_ID_MAX + 1], id0[CAIRN_NODE_ID_MAX + 1];

    assert_int_equal(cairn_causal_add_node(f->r, CAIRN_NODE_DECISION, "Choose routing", "episode-1", &n),
                     CAIRN_OK);
    assert_int_equal(n.frequency, 1);
    assert_int_equal(n.n_episodes, 1);
    assert_true(n.success_rate == 1.0);
    assert_int_equal(cairn_causal_add_node(f->r, CAIRN_NODE_EVENT, "Choose routing", "episode-2", &m),
                     CAIRN_OK);
    assert_string_equal(n.id, m.id);
    assert_int_equal(m.frequency, 2);
    assert_int_equal(m.type, CAIRN_NODE_DECISION); /* the first type stays */
    assert_int_equal(m.n_episodes, 2);
    assert_string_equal(m.episodes[1], "episode-2");
    cairn_causal_node_clear(&m);
    /* The same episode again: counted, not listed twice. */
    assert_int_equal(cairn_causal_add_node(f->r, CAIRN_NODE_DECISION, "Choose routing", "episode-2", &m),
                     CAIRN_OK);
    assert_int_equal(m.frequency, 3);
    assert_int_equal(m.n_episodes, 2);
    cairn_causal_node_clear(&m);
    /* A store made by this release folds case: another case is the same
     * node, as ReflexionMemory's -ieq compares them. */
    node(f, CAIRN_NODE_DECISION, "choose ROUTING", NULL, other);
    assert_string_equal(other, n.id);
    assert_int_equal(cairn_causal_node_id(f->r, "CHOOSE routing", id0), CAIRN_OK);
    assert_string_equal(id0, n.id);
    node(f, CAIRN_NODE_DECISION, "Choose routes", NULL, other);
    assert_string_not_equal(other, n.id);
    /* The id is the label's, whatever came before. */
    char id[CAIRN_NODE_ID_MAX + 1];
    assert_int_equal(cairn_causal_node_id(f->r, "Choose routing", id), CAIRN_OK);
    assert_string_equal(id, n.id);
    cairn_causal_node_clear(&n);
    assert_int_equal(cairn_causal_add_node(f->r, 99, "x", NULL, NULL), CAIRN_EINVAL);
    assert_int_equal(cairn_causal_add_node(f->r, CAIRN_NODE_EVENT, "", NULL, NULL), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_reflex_errmsg(f->r), "label"));
    assert_int_equal(cairn_causal_add_node(f->r, CAIRN_NODE_EVENT, "bad \xff utf8", NULL, NULL),
                     CAIRN_EINVAL);
}

/* A new store folds the case of pattern names too; a store whose MANIFEST
 * predates the label rule compares labels and names byte for byte, as it
 * always did: its node ids were made so. */
static void test_label_rule_of_an_older_store(void **state)
{
    fx *f = *state;
    char a[CAIRN_NODE_ID_MAX + 1], b[CAIRN_NODE_ID_MAX + 1];
    cairn_pattern_spec ps = CAIRN_PATTERN_SPEC_INIT;
    cairn_pattern *p = NULL;
    size_t n = 0;
    cairn_config c;

    ps.name = "Run Pester tests";
    ps.trigger = "a change";
    ps.action = "run them";
    assert_int_equal(cairn_pattern_add(f->r, &ps, NULL), CAIRN_OK);
    ps.name = "run pester TESTS";
    assert_int_equal(cairn_pattern_add(f->r, &ps, NULL), CAIRN_OK);
    assert_int_equal(cairn_pattern_list(f->r, 0.0, 1, &p, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_int_equal(p[0].occurrences, 2);
    assert_string_equal(p[0].name, "Run Pester tests"); /* the first spelling stays */
    cairn_patterns_free(p, n);

    /* the same store as one made before the rule (an empty one) */
    close_all(f);
    tu_rmrf(f->dir);
    open_all(f);
    close_all(f);
    tu_manifest_file_as_version(f->dir, 5);
    open_all(f);
    assert_int_equal(cairn_config_get(f->db, &c), CAIRN_OK);
    assert_int_equal(c.labels_fold_case, 0);
    node(f, CAIRN_NODE_EVENT, "Deploy to staging", NULL, a);
    node(f, CAIRN_NODE_EVENT, "deploy to staging", NULL, b);
    assert_string_not_equal(a, b);
    node(f, CAIRN_NODE_EVENT, "Deploy to staging", NULL, b);
    assert_string_equal(a, b);
    ps.name = "Run Pester tests";
    assert_int_equal(cairn_pattern_add(f->r, &ps, NULL), CAIRN_OK);
    ps.name = "RUN PESTER TESTS";
    assert_int_equal(cairn_pattern_add(f->r, &ps, NULL), CAIRN_OK);
    assert_int_equal(cairn_pattern_list(f->r, 0.0, 1, &p, &n), CAIRN_OK);
    assert_int_equal(n, 2);
    cairn_patterns_free(p, n);
    /* and after a reopen, from its log and graph file, the same */
    reopen(f);
    node(f, CAIRN_NODE_EVENT, "deploy to staging", NULL, a);
    assert_string_not_equal(a, b);
}

static void test_edge_running_average(void **state)
{
    fx *f = *state;
    char a[CAIRN_NODE_ID_MAX + 1], b[CAIRN_NODE_ID_MAX + 1];
    cairn_causal_edge e;

    node(f, CAIRN_NODE_DECISION, "A", NULL, a);
    node(f, CAIRN_NODE_OUTCOME, "B", NULL, b);
    assert_int_equal(cairn_causal_add_edge(f->r, a, b, CAIRN_EDGE_CAUSES, 0.9, "ep1", &e), CAIRN_OK);
    assert_int_equal(e.evidence_count, 1);
    assert_true(e.weight == 0.9);
    cairn_causal_edge_clear(&e);
    assert_int_equal(cairn_causal_add_edge(f->r, a, b, CAIRN_EDGE_CAUSES, 0.5, "ep2", &e), CAIRN_OK);
    assert_int_equal(e.evidence_count, 2);
    assert_true(e.weight > 0.7 - 1e-12 && e.weight < 0.7 + 1e-12);
    assert_string_equal(e.source, a);
    assert_string_equal(e.target, b);
    assert_int_equal(e.n_episodes, 2);
    cairn_causal_edge_clear(&e);
    /* Another type is another edge. */
    assert_int_equal(cairn_causal_add_edge(f->r, a, b, CAIRN_EDGE_ENABLES, 0.2, NULL, &e), CAIRN_OK);
    assert_int_equal(e.evidence_count, 1);
    cairn_causal_edge_clear(&e);
    /* And it survives a checkpoint and a reopen (the file's rows). */
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    reopen(f);
    assert_int_equal(cairn_causal_add_edge(f->r, a, b, CAIRN_EDGE_CAUSES, 1.0, NULL, &e), CAIRN_OK);
    assert_int_equal(e.evidence_count, 3);
    assert_true(e.weight > 0.8 - 1e-12 && e.weight < 0.8 + 1e-12);
    cairn_causal_edge_clear(&e);
    assert_int_equal(cairn_causal_add_edge(f->r, a, "n0000000000000001", CAIRN_EDGE_CAUSES, 0.5, NULL, NULL),
                     CAIRN_ENOTFOUND);
    assert_int_equal(cairn_causal_add_edge(f->r, a, b, CAIRN_EDGE_CAUSES, 1.5, NULL, NULL), CAIRN_EINVAL);
    assert_int_equal(cairn_causal_add_edge(f->r, "A", b, CAIRN_EDGE_CAUSES, 0.5, NULL, NULL), CAIRN_EINVAL);
}

/* a -> b -> c -> d -> e -> f -> g, with a cycle c -> a and a shortcut b -> e. */
static void chain(fx *f, char ids[7][CAIRN_NODE_ID_MAX + 1])
{
    static const char *labels[7] = {"Alpha start", "Beta", "Gamma", "Delta", "Epsilon",
                                    "Zeta", "Eta final"};
    for (int i = 0; i < 7; i++)
        node(f, CAIRN_NODE_EVENT, labels[i], NULL, ids[i]);
    for (int i = 0; i < 6; i++)
        edge(f, ids[i], ids[i + 1], 0.5);
    edge(f, ids[2], ids[0], 0.5);
}

static void check_paths(fx *f)
{
    cairn_causal_path p;
    assert_int_equal(cairn_causal_path_find(f->r, "alpha", "GAMMA", 5, &p), CAIRN_OK);
    assert_true(p.found);
    assert_int_equal(p.depth, 2);
    assert_int_equal(p.n, 3);
    assert_string_equal(p.path[0].label, "Alpha start");
    assert_string_equal(p.path[1].label, "Beta");
    assert_string_equal(p.path[2].label, "Gamma");
    cairn_causal_path_clear(&p);
    /* Shortcut: a b e f g is 4 edges, not 6. */
    assert_int_equal(cairn_causal_path_find(f->r, "Alpha", "final", 5, &p), CAIRN_OK);
    assert_true(p.found);
    assert_int_equal(p.depth, 4);
    assert_string_equal(p.path[2].label, "Epsilon");
    cairn_causal_path_clear(&p);
    /* The depth limit. */
    assert_int_equal(cairn_causal_path_find(f->r, "Alpha", "final", 3, &p), CAIRN_OK);
    assert_false(p.found);
    assert_string_equal(p.error, "No path found within depth 3");
    cairn_causal_path_clear(&p);
    /* Against the edges: g reaches nothing. The cycle a b c a ends. */
    assert_int_equal(cairn_causal_path_find(f->r, "final", "Alpha", 10, &p), CAIRN_OK);
    assert_false(p.found);
    cairn_causal_path_clear(&p);
    assert_int_equal(cairn_causal_path_find(f->r, "Gamma", "Beta", 10, &p), CAIRN_OK);
    assert_true(p.found);
    assert_int_equal(p.depth, 2); /* c a b, through the cycle */
    cairn_causal_path_clear(&p);
    assert_int_equal(cairn_causal_path_find(f->r, "Beta", "Beta", 1, &p), CAIRN_OK);
    assert_true(p.found);
    assert_int_equal(p.depth, 0);
    cairn_causal_path_clear(&p);
    assert_int_equal(cairn_causal_path_find(f->r, "nothing like it", "Beta", 5, &p), CAIRN_OK);
    assert_false(p.found);
    assert_string_equal(p.error, "Node not found");
    cairn_causal_path_clear(&p);
    assert_int_equal(cairn_causal_path_find(f->r, "Alpha", "Beta", 11, &p), CAIRN_EINVAL);
    assert_int_equal(cairn_causal_path_find(f->r, "", "Beta", 5, &p), CAIRN_EINVAL);
}

static void test_paths(void **state)
{
    fx *f = *state;
    char ids[7][CAIRN_NODE_ID_MAX + 1];
    chain(f, ids);
    edge(f, ids[1], ids[4], 0.5);
    check_paths(f);                 /* all in the RAM delta */
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    check_paths(f);                 /* all in the graph file */
    reopen(f);
    check_paths(f);
}

static void test_paths_file_and_delta(void **state)
{
    fx *f = *state;
    char ids[7][CAIRN_NODE_ID_MAX + 1];
    cairn_causal_path p;
    chain(f, ids);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    /* The shortcut and a new node arrive after the file. */
    edge(f, ids[1], ids[4], 0.5);
    check_paths(f);
    char x[CAIRN_NODE_ID_MAX + 1];
    node(f, CAIRN_NODE_OUTCOME, "Omega (Unicode ÉTÉ)", NULL, x);
    edge(f, ids[6], x, 0.5);
    assert_int_equal(cairn_causal_path_find(f->r, "Alpha", "été", 10, &p), CAIRN_OK);
    assert_true(p.found);
    assert_int_equal(p.depth, 5);
    cairn_causal_path_clear(&p);
    reopen(f);
    assert_int_equal(cairn_causal_path_find(f->r, "Alpha", "été", 10, &p), CAIRN_OK);
    assert_true(p.found);
    assert_int_equal(p.depth, 5);
    cairn_causal_path_clear(&p);
}

/* Label lookup against a scan: labels over a four-letter alphabet share
 * most of their 4-grams, so the index's candidates often fail the whole
 * query, and many labels hold each query (the first in node order must
 * win). Queries of every length (1-2: scan; 3: the 4-gram key range; 4+:
 * the join), in other case, through the RAM delta, the file, and both. */
typedef struct lbls {
    char s[6000][16];
    size_t n;
} lbls;

static uint64_t lrng = 0x1234567;
static unsigned lrand(unsigned m)
{
    lrng = lrng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(lrng >> 33) % m;
}

static void add_labels(fx *f, lbls *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char lb[16];
        size_t len = 1 + lrand(12);
        for (size_t k = 0; k < len; k++)
            lb[k] = "abc-"[lrand(4)];
        lb[len] = 0;
        node(f, CAIRN_NODE_EVENT, lb, NULL, NULL);
        size_t j = 0;
        while (j < l->n && strcmp(l->s[j], lb) != 0)
            j++;
        if (j == l->n) /* a repeated label counts again, no new node */
            strcpy(l->s[l->n++], lb);
    }
}

static void check_lookups(fx *f, const lbls *l)
{
    for (int t = 0; t < 400; t++) {
        char q[16], up[16];
        size_t len;
        if (t % 2 == 0) { /* a piece of a label */
            const char *src = l->s[lrand((unsigned)l->n)];
            size_t sl = strlen(src), at = lrand((unsigned)sl);
            len = 1 + lrand((unsigned)(sl - at));
            memcpy(q, src + at, len);
        } else { /* anything, often in no label */
            len = 1 + lrand(9);
            for (size_t k = 0; k < len; k++)
                q[k] = "abc-"[lrand(4)];
        }
        q[len] = 0;
        for (size_t k = 0; k <= len; k++)
            up[k] = lrand(2) && q[k] >= 'a' && q[k] <= 'z' ? (char)(q[k] - 32) : q[k];
        const char *want = NULL;
        for (size_t i = 0; i < l->n && want == NULL; i++)
            if (strstr(l->s[i], q) != NULL)
                want = l->s[i];
        cairn_causal_path p;
        assert_int_equal(cairn_causal_path_find(f->r, up, up, 5, &p), CAIRN_OK);
        if (want == NULL) {
            if (p.found)
                fail_msg("%s: found %s, no label holds it", up, p.path[0].label);
            assert_string_equal(p.error, "Node not found");
        } else {
            if (!p.found)
                fail_msg("%s: not found, %s holds it", up, want);
            assert_string_equal(p.path[0].label, want);
        }
        cairn_causal_path_clear(&p);
    }
}

static void test_label_lookup_matches_a_scan(void **state)
{
    fx *f = *state;
    static lbls l;
    l.n = 0;
    add_labels(f, &l, 300);
    check_lookups(f, &l);           /* the RAM delta, scanned */
    add_labels(f, &l, 2500);
    check_lookups(f, &l);           /* the RAM delta, past DL_MIN: its index */
    add_labels(f, &l, 100);
    check_lookups(f, &l);           /* the index caught up with new nodes */
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    check_lookups(f, &l);           /* the graph file */
    add_labels(f, &l, 200);
    check_lookups(f, &l);           /* the file, then the delta scanned */
    add_labels(f, &l, 2500);
    check_lookups(f, &l);           /* the file, then the delta's index */
    reopen(f);
    check_lookups(f, &l);
}

/* A hub with 40,000 children: the search's scratch grows far past what it
 * keeps between searches, is given back, and the next searches (small and
 * wide, before and after the file) still answer right. */
static void wide_paths(fx *f)
{
    cairn_causal_path p;
    assert_int_equal(cairn_causal_path_find(f->r, "hub", "target", 5, &p), CAIRN_OK);
    assert_true(p.found);
    assert_int_equal(p.depth, 2);
    assert_string_equal(p.path[1].label, "leaf-39999");
    cairn_causal_path_clear(&p);
    assert_int_equal(cairn_causal_path_find(f->r, "leaf-00007", "hub", 5, &p), CAIRN_OK);
    assert_false(p.found); /* leaves have no out-edges */
    cairn_causal_path_clear(&p);
    assert_int_equal(cairn_causal_path_find(f->r, "hub", "leaf-12345", 5, &p), CAIRN_OK);
    assert_true(p.found);
    assert_int_equal(p.depth, 1);
    cairn_causal_path_clear(&p);
}

static void test_wide_fanout_path(void **state)
{
    fx *f = *state;
    enum { LEAVES = 40000 };
    static char lbl[LEAVES][24], ids[LEAVES][CAIRN_NODE_ID_MAX + 1];
    static cairn_causal_op ops[LEAVES];
    char hub[CAIRN_NODE_ID_MAX + 1], tgt[CAIRN_NODE_ID_MAX + 1];
    node(f, CAIRN_NODE_DECISION, "hub", NULL, hub);
    node(f, CAIRN_NODE_OUTCOME, "target", NULL, tgt);
    for (int i = 0; i < LEAVES; i++) {
        snprintf(lbl[i], sizeof lbl[i], "leaf-%05d", i);
        memset(&ops[i], 0, sizeof ops[i]);
        ops[i].type = CAIRN_NODE_EVENT;
        ops[i].label = lbl[i];
    }
    assert_int_equal(cairn_causal_add_batch(f->r, ops, LEAVES), CAIRN_OK);
    for (int i = 0; i < LEAVES; i++) {
        assert_int_equal(cairn_causal_node_id(f->r, lbl[i], ids[i]), CAIRN_OK);
        memset(&ops[i], 0, sizeof ops[i]);
        ops[i].is_edge = 1;
        ops[i].type = CAIRN_EDGE_CAUSES;
        ops[i].source = hub;
        ops[i].target = ids[i];
        ops[i].weight = 0.5;
    }
    assert_int_equal(cairn_causal_add_batch(f->r, ops, LEAVES), CAIRN_OK);
    edge(f, ids[LEAVES - 1], tgt, 0.5);
    wide_paths(f);
    wide_paths(f);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    wide_paths(f);
}

static void test_patterns(void **state)
{
    fx *f = *state;
    cairn_pattern_spec s = {CAIRN_PATTERN_SPEC_VERSION, "Lint bypass", "Unrelated lint errors", "Use --no-verify", NULL, 1.0, NULL};
    cairn_pattern p, *v;
    size_t n;

    assert_int_equal(cairn_pattern_add(f->r, &s, &p), CAIRN_OK);
    assert_int_equal(p.occurrences, 1);
    assert_true(p.success_rate == 1.0);
    assert_int_equal(p.id[0], 'p');
    cairn_pattern_clear(&p);
    assert_null(p.name);
    s.success_rate = 0.0;
    assert_int_equal(cairn_pattern_add(f->r, &s, NULL), CAIRN_OK);
    s.success_rate = 0.5;
    assert_int_equal(cairn_pattern_add(f->r, &s, NULL), CAIRN_OK);
    cairn_pattern_spec bad = {CAIRN_PATTERN_SPEC_VERSION, "Retry forever", "Flaky test", "Rerun", "", 0.0, NULL};
    assert_int_equal(cairn_pattern_add(f->r, &bad, NULL), CAIRN_OK);
    cairn_pattern_spec once = {CAIRN_PATTERN_SPEC_VERSION, "Once bad", "t", "a", "", 0.1, NULL};
    assert_int_equal(cairn_pattern_add(f->r, &once, NULL), CAIRN_OK);
    assert_int_equal(cairn_pattern_add(f->r, &bad, NULL), CAIRN_OK);

    assert_int_equal(cairn_pattern_list(f->r, 0, 1, &v, &n), CAIRN_OK);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].name, "Lint bypass"); /* 0.5 over 3 */
    assert_int_equal(v[0].occurrences, 3);
    assert_true(v[0].success_rate > 0.5 - 1e-12 && v[0].success_rate < 0.5 + 1e-12);
    assert_string_equal(v[2].name, "Retry forever");
    cairn_patterns_free(v, n);
    assert_int_equal(cairn_pattern_list(f->r, 0.2, 3, &v, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    cairn_patterns_free(v, n);
    /* Anti-patterns: low rate and at least 2 occurrences ("Once bad" has 1). */
    assert_int_equal(cairn_pattern_anti(f->r, 0.3, &v, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].name, "Retry forever");
    cairn_patterns_free(v, n);
    assert_int_equal(cairn_pattern_anti(f->r, 0.6, &v, &n), CAIRN_OK);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].name, "Retry forever"); /* worst first */
    cairn_patterns_free(v, n);
    reopen(f);
    assert_int_equal(cairn_pattern_list(f->r, 0, 1, &v, &n), CAIRN_OK);
    assert_int_equal(n, 3);
    cairn_patterns_free(v, n);
    s.success_rate = 2;
    assert_int_equal(cairn_pattern_add(f->r, &s, NULL), CAIRN_EINVAL);
    s.success_rate = 1;
    s.trigger = NULL;
    assert_int_equal(cairn_pattern_add(f->r, &s, NULL), CAIRN_EINVAL);
    assert_non_null(strstr(cairn_reflex_errmsg(f->r), "trigger"));
    assert_int_equal(cairn_pattern_list(f->r, 0, 0, &v, &n), CAIRN_EINVAL);
}

static const char *EP1 =
    "{\"session\":\"2026-01-01-session-1\",\"task\":\"Fix the router\",\"outcome\":\"success\","
    "\"timestamp\":\"2026-01-01T10:00:00Z\","
    "\"decisions\":[{\"id\":\"d002\",\"timestamp\":\"2026-01-01T10:30:00Z\",\"type\":\"design\","
    "\"context\":\"Routing\",\"chosen\":\"Serena-first\",\"rationale\":\"latency\","
    "\"outcome\":\"success\",\"effects\":[\"e001\"]},"
    "{\"id\":\"d001\",\"timestamp\":\"2026-01-01T10:05:00Z\",\"type\":\"recovery\","
    "\"context\":\"\",\"chosen\":\"Retry blindly\",\"rationale\":\"\",\"outcome\":\"failure\",\"effects\":[]}],"
    "\"events\":[{\"id\":\"e001\",\"timestamp\":\"2026-01-01T10:40:00Z\",\"type\":\"error\","
    "\"content\":\"Build broke\",\"caused_by\":[],\"leads_to\":[]},"
    "{\"id\":\"e002\",\"timestamp\":\"2026-01-01T10:50:00Z\",\"type\":\"milestone\","
    "\"content\":\"Fixed the build\",\"caused_by\":[],\"leads_to\":[]}],"
    "\"lessons\":[\"Test first\"],\"metrics\":{\"commits\":2}}";

static void test_episodes(void **state)
{
    fx *f = *state;
    char *out = NULL;
    cJSON *o;
    cairn_episode_query q = CAIRN_EPISODE_QUERY_INIT;

    assert_int_equal(cairn_episode_put(f->r, EP1, strlen(EP1), 0, &out), CAIRN_OK);
    o = cJSON_Parse(out);
    assert_non_null(o);
    assert_string_equal(cJSON_GetObjectItem(o, "id")->valuestring, "episode-2026-01-01-session-1");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metrics"), "tool_calls")->valueint, 0);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metrics"), "commits")->valueint, 2);
    cJSON_Delete(o);
    free(out);
    assert_int_equal(cairn_episode_put(f->r, EP1, strlen(EP1), 0, NULL), CAIRN_EEXIST);
    const char *ep2 = "{\"session\":\"s2\",\"task\":\"t\",\"outcome\":\"failure\","
                      "\"timestamp\":\"2026-02-01T00:00:00Z\"}";
    const char *ep3 = "{\"session\":\"s3\",\"task\":\"t\",\"outcome\":\"partial\","
                      "\"timestamp\":\"2025-12-01T00:00:00Z\"}";
    assert_int_equal(cairn_episode_put(f->r, ep2, strlen(ep2), 0, NULL), CAIRN_OK);
    assert_int_equal(cairn_episode_put(f->r, ep3, strlen(ep3), 0, NULL), CAIRN_OK);
    assert_int_equal(cairn_episode_get(f->r, "2026-01-01-session-1", &out), CAIRN_OK);
    assert_non_null(strstr(out, "Fix the router"));
    free(out);
    assert_int_equal(cairn_episode_get(f->r, "nope", &out), CAIRN_ENOTFOUND);
    assert_null(out);
    assert_int_equal(cairn_episode_list(f->r, &q, &out), CAIRN_OK);
    o = cJSON_Parse(out);
    assert_int_equal(cJSON_GetArraySize(o), 3);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(o, 0), "session")->valuestring, "s2");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(o, 2), "session")->valuestring, "s3");
    cJSON_Delete(o);
    free(out);
    q.outcome = "failure";
    assert_int_equal(cairn_episode_list(f->r, &q, &out), CAIRN_OK);
    o = cJSON_Parse(out);
    assert_int_equal(cJSON_GetArraySize(o), 1);
    cJSON_Delete(o);
    free(out);
    q.outcome = NULL;
    q.since_ms = 1767225600000LL; /* 2026-01-01 */
    q.max_results = 1;
    assert_int_equal(cairn_episode_list(f->r, &q, &out), CAIRN_OK);
    o = cJSON_Parse(out);
    assert_int_equal(cJSON_GetArraySize(o), 1);
    cJSON_Delete(o);
    free(out);
    q.max_results = 101;
    assert_int_equal(cairn_episode_list(f->r, &q, &out), CAIRN_EINVAL);
    /* Decisions by timestamp. */
    assert_int_equal(cairn_episode_decisions(f->r, "episode-2026-01-01-session-1", &out), CAIRN_OK);
    o = cJSON_Parse(out);
    assert_int_equal(cJSON_GetArraySize(o), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(o, 0), "id")->valuestring, "d001");
    cJSON_Delete(o);
    free(out);
    assert_int_equal(cairn_episode_decisions(f->r, "episode-none", &out), CAIRN_OK);
    assert_string_equal(out, "[]");
    free(out);
    /* Replace with force: the new one is read, across a reopen. */
    const char *ep2b = "{\"session\":\"s2\",\"task\":\"t2\",\"outcome\":\"success\","
                       "\"timestamp\":\"2026-02-01T00:00:00Z\"}";
    assert_int_equal(cairn_episode_put(f->r, ep2b, strlen(ep2b), 1, NULL), CAIRN_OK);
    reopen(f);
    assert_int_equal(cairn_episode_get(f->r, "s2", &out), CAIRN_OK);
    assert_non_null(strstr(out, "\"t2\""));
    free(out);
}

static void expect_invalid(fx *f, const char *json, const char *field)
{
    if (cairn_episode_put(f->r, json, strlen(json), 0, NULL) != CAIRN_EINVAL)
        fail_msg("accepted: %s", json);
    if (strstr(cairn_reflex_errmsg(f->r), field) == NULL)
        fail_msg("message \"%s\" does not name %s", cairn_reflex_errmsg(f->r), field);
}

static void test_episode_validation(void **state)
{
    fx *f = *state;
    expect_invalid(f, "not json", "JSON");
    expect_invalid(f, "[1]", "object");
    expect_invalid(f, "{\"task\":\"t\",\"outcome\":\"success\"}", "session");
    expect_invalid(f, "{\"session\":\"s\",\"task\":\"t\",\"outcome\":\"won\"}", "outcome");
    expect_invalid(f, "{\"session\":\"s\",\"task\":\"t\",\"outcome\":\"success\",\"timestamp\":\"yesterday\"}",
                   "timestamp");
    expect_invalid(f, "{\"session\":\"s\",\"task\":\"t\",\"outcome\":\"success\",\"decisions\":{}}",
                   "decisions");
    expect_invalid(f, "{\"session\":\"s\",\"task\":\"t\",\"outcome\":\"success\",\"metrics\":"
                      "{\"errors\":-1}}", "metrics.errors");
    expect_invalid(f, "{\"session\":\"s\",\"task\":\"t\",\"outcome\":\"success\",\"lessons\":\"x\"}",
                   "lessons");
    const char *nulls = "{\"session\":\"n\",\"task\":\"t\",\"outcome\":\"success\",\"metrics\":"
                        "{\"tool_calls\":null},\"lessons\":null}";
    char *out = NULL;
    assert_int_equal(cairn_episode_put(f->r, nulls, strlen(nulls), 0, &out), CAIRN_OK);
    assert_non_null(strstr(out, "\"tool_calls\":0"));
    free(out);
    assert_int_equal(cairn_episode_put(f->r, "{\"session\":\"n\"}", 13, 1, NULL), CAIRN_EINVAL);
    expect_invalid(f, "{\"session\":\"a/b\",\"task\":\"t\",\"outcome\":\"success\"}", "session");
    cairn_reflex_status st;
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_int_equal(st.episodes, 1); /* only the one with nulls */
}

/* Parts of an episode that cannot be used are dropped or defaulted, each
 * said in the notes, and the episode is kept (one rule for every put). */
static void test_episode_parts_dropped_and_noted(void **state)
{
    fx *f = *state;
    const char *ep =
        "{\"session\":\"kept\",\"task\":\"\",\"outcome\":\"partial\","
        "\"decisions\":[{\"type\":\"design\",\"chosen\":\"A\"},{\"type\":\"guess\",\"chosen\":\"B\"},"
        "{\"type\":\"design\"},{\"chosen\":\"C\",\"outcome\":\"maybe\"}],"
        "\"events\":[{\"type\":\"artifact\",\"content\":\"x\"},{\"type\":\"commit\"},"
        "{\"type\":\"commit\",\"content\":\"abc123\"},{\"content\":\"c\",\"caused_by\":[1]}]}";
    char *out = NULL, *notes = NULL;
    cJSON *o, *n;

    assert_int_equal(cairn_episode_put_noted(f->r, ep, strlen(ep), 0, &out, &notes), CAIRN_OK);
    o = cJSON_Parse(out);
    n = cJSON_Parse(notes);
    assert_string_equal(cJSON_GetObjectItem(o, "task")->valuestring, "kept");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "decisions")), 1);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "decisions"), 0), "chosen")
            ->valuestring,
        "A");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "events")), 1);
    assert_int_equal(cJSON_GetArraySize(n), 7); /* the task, 3 decisions, 3 events */
    assert_non_null(strstr(cJSON_GetArrayItem(n, 0)->valuestring, "task"));
    assert_non_null(strstr(cJSON_GetArrayItem(n, 1)->valuestring, "decisions[1].type"));
    assert_non_null(strstr(cJSON_GetArrayItem(n, 2)->valuestring, "decisions[2].chosen"));
    assert_non_null(strstr(cJSON_GetArrayItem(n, 3)->valuestring, "decisions[3].outcome"));
    assert_non_null(strstr(cJSON_GetArrayItem(n, 4)->valuestring, "events[0].type"));
    assert_non_null(strstr(cJSON_GetArrayItem(n, 5)->valuestring, "events[1].content"));
    assert_non_null(strstr(cJSON_GetArrayItem(n, 6)->valuestring, "events[3].caused_by[0]"));
    assert_non_null(strstr(cJSON_GetArrayItem(n, 6)->valuestring, "; dropped"));
    cJSON_Delete(o);
    cJSON_Delete(n);
    free(out);
    cairn_free(notes);
    /* a whole episode: no notes */
    assert_int_equal(cairn_episode_put_noted(f->r, EP1, strlen(EP1), 0, NULL, &notes), CAIRN_OK);
    assert_string_equal(notes, "[]");
    cairn_free(notes);
    /* and the update folds no node from the dropped decision */
    {
        cairn_causal_update_stats us;
        char id[CAIRN_NODE_ID_MAX + 1];
        cairn_causal_node node;
        assert_int_equal(cairn_causal_update(f->r, NULL, &us), CAIRN_OK);
        assert_int_equal(cairn_causal_node_id(f->r, "design: ", id), CAIRN_OK);
        memset(&node, 0, sizeof node);
        assert_int_equal(cairn_causal_get_node(f->r, id, &node), CAIRN_ENOTFOUND);
    }
}

static void test_update_idempotent(void **state)
{
    fx *f = *state;
    cairn_causal_update_stats s;
    cairn_causal_update_opts o = CAIRN_CAUSAL_UPDATE_INIT;
    cairn_reflex_status st;
    cairn_causal_path p;
    cairn_pattern *v;
    size_t n;

    assert_int_equal(cairn_episode_put(f->r, EP1, strlen(EP1), 0, NULL), CAIRN_OK);
    o.dry_run = 1;
    assert_int_equal(cairn_causal_update(f->r, &o, &s), CAIRN_OK);
    assert_int_equal(s.episodes_processed, 1);
    assert_int_equal(s.nodes_added, 5); /* outcome, 2 decisions, 2 events */
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_int_equal(st.nodes, 0); /* a dry run adds nothing */
    o.dry_run = 0;
    assert_int_equal(cairn_causal_update(f->r, &o, &s), CAIRN_OK);
    assert_int_equal(s.episodes_processed, 1);
    assert_int_equal(s.nodes_added, 5);
    /* effects d002->e001, error e001 -> fix e002, 2 decisions -> outcome */
    assert_int_equal(s.edges_added, 4);
    assert_int_equal(s.patterns_added, 2);
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_int_equal(st.nodes, 5);
    assert_int_equal(st.edges, 4);
    assert_int_equal(st.patterns, 2);
    assert_int_equal(st.processed, 1);
    assert_int_equal(cairn_causal_path_find(f->r, "Serena-first", "Fixed the build", 5, &p), CAIRN_OK);
    assert_true(p.found);
    assert_int_equal(p.depth, 2);
    cairn_causal_path_clear(&p);
    assert_int_equal(cairn_pattern_anti(f->r, 0.3, &v, &n), CAIRN_OK);
    assert_int_equal(n, 0); /* one occurrence only */
    cairn_patterns_free(v, n);
    /* Again: nothing to do, nothing changes, also after a reopen. */
    assert_int_equal(cairn_causal_update(f->r, NULL, &s), CAIRN_OK);
    assert_int_equal(s.episodes_processed, 0);
    reopen(f);
    assert_int_equal(cairn_causal_update(f->r, NULL, &s), CAIRN_OK);
    assert_int_equal(s.episodes_processed, 0);
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_int_equal(st.nodes, 5);
    assert_int_equal(st.edges, 4);
}

static const char *GRAPH =
    "{\"version\":\"1.0\",\"updated\":\"2026-07-28T09:01:26Z\",\"nodes\":["
    "{\"id\":\"aaa\",\"type\":\"error\",\"label\":\"Threshold too low\",\"episodes\":[\"ep-1\",\"ep-2\"],"
    "\"created\":\"2026-07-28T08:55:40.013731+00:00\"},"
    "{\"id\":\"bbb\",\"type\":\"milestone\",\"label\":\"Raised threshold\",\"episodes\":[\"ep-1\"]},"
    "{\"id\":\"ccc\",\"type\":\"wizard\",\"label\":\"Unknown type\",\"episodes\":[]}],"
    "\"edges\":[{\"source\":\"aaa\",\"target\":\"bbb\",\"type\":\"causes\",\"weight\":0.7,"
    "\"evidence_count\":2,\"episodes\":[\"ep-1\",\"ep-2\"],\"contributions\":{\"ep-1\":0.8,\"ep-2\":0.6}},"
    "{\"source\":\"aaa\",\"target\":\"ccc\",\"type\":\"causes\",\"weight\":0.5}],"
    "\"patterns\":[{\"id\":\"p1\",\"name\":\"design pattern\",\"trigger\":\"Designing\",\"action\":\"First\","
    "\"success_rate\":0.5,\"occurrences\":2,\"episodes\":[\"e1\",\"e2\"],\"contributions\":{\"e1\":1.0,\"e2\":0.0}}]}";

static void test_import(void **state)
{
    fx *f = *state;
    cairn_causal_import_stats s;
    cairn_causal_path p;
    cairn_pattern *v;
    size_t n;

    assert_int_equal(cairn_causal_import(f->r, GRAPH, strlen(GRAPH), &s), CAIRN_OK);
    assert_int_equal(s.nodes, 2);
    assert_int_equal(s.edges, 1);
    assert_int_equal(s.patterns, 1);
    assert_int_equal(s.skipped, 2); /* the unknown type, and the edge to it */
    assert_int_equal(cairn_causal_path_find(f->r, "threshold too", "raised", 1, &p), CAIRN_OK);
    assert_true(p.found);
    assert_int_equal(p.path[0].frequency, 2);
    assert_int_equal(p.path[0].type, CAIRN_NODE_ERROR);
    assert_int_equal(p.path[0].created_ms, 1785228940013LL);
    assert_int_equal(p.path[1].type, CAIRN_NODE_MILESTONE);
    cairn_causal_edge e;
    assert_int_equal(cairn_causal_add_edge(f->r, p.path[0].id, p.path[1].id, CAIRN_EDGE_CAUSES, 0.7, NULL, &e),
                     CAIRN_OK);
    assert_int_equal(e.evidence_count, 3); /* two contributions came in */
    assert_true(e.weight > 0.7 - 1e-12 && e.weight < 0.7 + 1e-12);
    cairn_causal_edge_clear(&e);
    cairn_causal_path_clear(&p);
    assert_int_equal(cairn_pattern_list(f->r, 0, 1, &v, &n), CAIRN_OK);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].occurrences, 2);
    assert_true(v[0].success_rate == 0.5);
    cairn_patterns_free(v, n);
    assert_int_equal(cairn_causal_import(f->r, "[]", 2, &s), CAIRN_EINVAL);
    assert_int_equal(cairn_causal_import(f->r, "{\"nodes\":3}", 11, &s), CAIRN_EINVAL);
}

static uint64_t records(fx *f)
{
    cairn_stats st;
    assert_int_equal(cairn_stats_get(f->db, &st), CAIRN_OK);
    return st.records;
}

/* The rule for text (README "Text"): labels, episode ids, pattern fields
 * and every string of an episode must be valid UTF-8 without NUL; the
 * message names the field, and nothing is written. */
static void test_text_breaking_the_rule_is_refused(void **state)
{
    fx *f = *state;
    char a[CAIRN_NODE_ID_MAX + 1], b[CAIRN_NODE_ID_MAX + 1];
    cairn_causal_op ops[2];
    cairn_reflex_status st;
    uint64_t before;
    static const struct {
        const char *json;
        size_t len;
        const char *msg;
    } eps[] = {
#define E(s, msg) {s, sizeof s - 1, msg}
        E("{\"session\":\"s1\",\"task\":\"t\",\"outcome\":\"success\",\"decisions\":"
          "[{\"chosen\":\"x\\u0000hidden\"}]}", "decisions[0].chosen: holds a NUL (\\u0000)"),
        E("{\"session\":\"s1\",\"task\":\"ab\0cd\",\"outcome\":\"success\"}",
          "task: holds a NUL byte"),
        E("{\"session\":\"s1\",\"task\":\"t\",\"outcome\":\"success\",\"lessons\":[\"ok\",\"\xff\"]}",
          "lessons[1]: is not valid UTF-8"),
        E("{\"session\":\"s1\",\"task\":\"t\",\"outcome\":\"success\",\"notes\":\"kept \\u0000\"}",
          "notes: holds a NUL (\\u0000)"),
#undef E
    };

    node(f, CAIRN_NODE_EVENT, "first", NULL, a);
    node(f, CAIRN_NODE_EVENT, "second", NULL, b);
    before = records(f);
    assert_int_equal(cairn_causal_add_node(f->r, CAIRN_NODE_EVENT, "bad \xff", NULL, NULL),
                     CAIRN_EINVAL);
    assert_string_equal(cairn_reflex_errmsg(f->r), "label: is not valid UTF-8 at byte 4");
    assert_int_equal(cairn_causal_add_node(f->r, CAIRN_NODE_EVENT, "fine", "ep\xc0\xaf", NULL),
                     CAIRN_EINVAL);
    assert_string_equal(cairn_reflex_errmsg(f->r), "episode: is not valid UTF-8 at byte 2");
    assert_int_equal(cairn_causal_add_edge(f->r, a, b, CAIRN_EDGE_CAUSES, 0.5, "e\xff", NULL),
                     CAIRN_EINVAL);
    assert_string_equal(cairn_reflex_errmsg(f->r), "episode: is not valid UTF-8 at byte 1");
    memset(ops, 0, sizeof ops);
    ops[0].type = CAIRN_NODE_EVENT;
    ops[0].label = "fine";
    ops[1].type = CAIRN_NODE_EVENT;
    ops[1].label = "x\xed\xa0\x80"; /* a surrogate */
    assert_int_equal(cairn_causal_add_batch(f->r, ops, 2), CAIRN_EINVAL);
    assert_string_equal(cairn_reflex_errmsg(f->r), "op 1: label: is not valid UTF-8 at byte 1");
    for (int k = 0; k < 5; k++) {
        static const char *const names[] = {"name", "trigger", "action", "description", "episode"};
        cairn_pattern_spec p = {CAIRN_PATTERN_SPEC_VERSION, "n", "t", "a", "d", 1.0, "e"};
        const char **field[] = {&p.name, &p.trigger, &p.action, &p.description, &p.episode};
        char want[64];
        *field[k] = "bad \xff";
        assert_int_equal(cairn_pattern_add(f->r, &p, NULL), CAIRN_EINVAL);
        snprintf(want, sizeof want, "%s: is not valid UTF-8 at byte 4", names[k]);
        assert_string_equal(cairn_reflex_errmsg(f->r), want);
    }
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++) {
        char *out = (char *)1;
        if (cairn_episode_put(f->r, eps[i].json, eps[i].len, 1, &out) != CAIRN_EINVAL)
            fail_msg("episode %zu was not refused", i);
        if (strcmp(cairn_reflex_errmsg(f->r), eps[i].msg) != 0)
            fail_msg("episode %zu: message '%s', not '%s'", i, cairn_reflex_errmsg(f->r),
                     eps[i].msg);
        assert_null(out);
    }
    assert_int_equal(records(f), before);
    reopen(f);
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_int_equal(st.nodes, 2);
    assert_int_equal(st.edges, 0);
    assert_int_equal(st.patterns, 0);
    assert_int_equal(st.episodes, 0);
    assert_int_equal(st.skipped, 0);
}

/* A causal-graph.json whose text breaks the rule is refused whole, naming
 * the member: a label the fold cannot take was counted as imported and
 * then dropped at replay ("1 record could not be applied"). */
static void test_import_refuses_text_that_breaks_the_rule(void **state)
{
    fx *f = *state;
    static const char bad_label[] =
        "{\"nodes\":[{\"id\":\"a\",\"type\":\"event\",\"label\":\"fine\"},"
        "{\"id\":\"b\",\"type\":\"event\",\"label\":\"not UTF-8 \xff\"}]}";
    static const char nul_episode[] =
        "{\"nodes\":[{\"id\":\"a\",\"type\":\"event\",\"label\":\"fine\"},"
        "{\"id\":\"b\",\"type\":\"event\",\"label\":\"also fine\"}],"
        "\"edges\":[{\"source\":\"a\",\"target\":\"b\",\"type\":\"causes\",\"weight\":0.5,"
        "\"episodes\":[\"ep\\u0000x\"],\"contributions\":{\"ep\":0.5}}]}";
    cairn_causal_import_stats s;
    cairn_reflex_status st;
    uint64_t before = records(f);

    s.nodes = 9;
    assert_int_equal(cairn_causal_import(f->r, bad_label, sizeof bad_label - 1, &s), CAIRN_EINVAL);
    assert_string_equal(cairn_reflex_errmsg(f->r), "causal graph: nodes[1].label: is not valid UTF-8");
    assert_int_equal(s.nodes, 0);
    assert_int_equal(cairn_causal_import(f->r, nul_episode, sizeof nul_episode - 1, &s),
                     CAIRN_EINVAL);
    assert_string_equal(cairn_reflex_errmsg(f->r),
                        "causal graph: edges[0].episodes[0]: holds a NUL (\\u0000)");
    assert_int_equal(records(f), before);
    reopen(f);
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_int_equal(st.nodes, 0);
    assert_int_equal(st.edges, 0);
    assert_int_equal(st.skipped, 0);
}

/* The graph file's name in the store, or NULL. */
static char *graph_file(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char *found = NULL;
    while (d != NULL && (de = readdir(d)) != NULL)
        if (strncmp(de->d_name, "graph-", 6) == 0 && strstr(de->d_name, ".cgx") != NULL &&
            strstr(de->d_name, ".tmp") == NULL) {
            free(found);
            found = tu_join(dir, de->d_name);
        }
    if (d != NULL)
        closedir(d);
    return found;
}

static void test_deterministic_rebuild(void **state)
{
    fx *f = *state;
    char ids[7][CAIRN_NODE_ID_MAX + 1];
    cairn_causal_import_stats s;
    cairn_causal_update_stats us;
    uint8_t *a, *b;
    size_t la, lb;
    char *path;

    /* A history with a file in the middle: edges folded out of order,
     * base rows changed after the file, episodes, patterns, an import. */
    chain(f, ids);
    assert_int_equal(cairn_causal_import(f->r, GRAPH, strlen(GRAPH), &s), CAIRN_OK);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    edge(f, ids[1], ids[4], 0.25);
    edge(f, ids[0], ids[1], 0.75);
    node(f, CAIRN_NODE_EVENT, "Beta", "episode-x", NULL);
    assert_int_equal(cairn_episode_put(f->r, EP1, strlen(EP1), 0, NULL), CAIRN_OK);
    assert_int_equal(cairn_causal_update(f->r, NULL, &us), CAIRN_OK);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    path = graph_file(f->dir);
    assert_non_null(path);
    a = tu_read_file(path, &la);
    assert_non_null(a);
    /* Drop it; reopen folds the whole log; write again. */
    close_all(f);
    assert_int_equal(unlink(path), 0);
    open_all(f);
    cairn_reflex_status st;
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_string_equal(st.graph_file, "");
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    b = tu_read_file(path, &lb);
    assert_non_null(b);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
    free(path);
}

/* The chain of check_paths checkpointed, the store closed, and the graph
 * file's bytes (its path in *path) to damage. */
static uint8_t *closed_chain_file(fx *f, char **path, size_t *len)
{
    char ids[7][CAIRN_NODE_ID_MAX + 1];
    uint8_t *buf;
    chain(f, ids);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    close_all(f);
    *path = graph_file(f->dir);
    assert_non_null(*path);
    buf = tu_read_file(*path, len);
    assert_non_null(buf);
    return buf;
}

static void test_damaged_file_rebuilt(void **state)
{
    fx *f = *state;
    cairn_causal_path p;
    uint64_t problems = 0;
    int checked = 0;
    char *path;
    size_t len;
    uint8_t *buf = closed_chain_file(f, &path, &len);

    buf[len - 3] ^= 0x20; /* a bit in the string blob */
    assert_int_equal(tu_write_file(path, buf, len), 0);
    free(buf);
    open_all(f);
    assert_int_equal(cairn_reflex_verify(f->db, NULL, NULL, &problems, &checked), CAIRN_OK);
    /* The writer's open set the damaged file aside and rebuilt from the log. */
    assert_int_equal(cairn_causal_path_find(f->r, "alpha", "gamma", 5, &p), CAIRN_OK);
    assert_true(p.found);
    cairn_causal_path_clear(&p);
    assert_int_equal(checked, 0);
    free(path);
}

typedef struct seen_problem {
    int n;
    uint64_t off;
    int code;
} seen_problem;

static void note_problem(void *user, const char *file, uint64_t off, int code, const char *msg)
{
    seen_problem *sp = user;
    (void)file, (void)msg;
    sp->n++;
    sp->off = off;
    sp->code = code;
}

static void test_verify_names_damage(void **state)
{
    fx *f = *state;
    char ids[7][CAIRN_NODE_ID_MAX + 1];
    uint64_t problems = 0;
    int checked = 0;
    char *path;
    uint8_t *buf;
    size_t len;

    chain(f, ids);
    assert_int_equal(cairn_reflex_checkpoint(f->r), CAIRN_OK);
    assert_int_equal(cairn_reflex_verify(f->db, NULL, NULL, &problems, &checked), CAIRN_OK);
    assert_int_equal(checked, 1);
    assert_int_equal(problems, 0);
    path = graph_file(f->dir);
    buf = tu_read_file(path, &len);
    /* The section table: 31 x (offset, length, sum) from byte 176
     * (format-spec/graph.md); the byte flipped is the 20th of the section
     * after it (the nodes' keys). The problem is reported at the start of
     * the section holding it. */
    size_t flip = 176 + 24 * 31 + 20;
    assert_true(len > flip);
    buf[flip] ^= 1;
    assert_int_equal(tu_write_file(path, buf, len), 0);
    uint64_t want = UINT64_MAX;
    for (int s = 0; s < 31; s++) {
        uint64_t off = 0, n = 0;
        for (int k = 7; k >= 0; k--) {
            off = off << 8 | buf[176 + 24 * s + k];
            n = n << 8 | buf[176 + 24 * s + 8 + k];
        }
        if (off <= flip && flip < off + n)
            want = off;
    }
    free(buf);
    free(path);
    assert_true(want != UINT64_MAX);
    seen_problem sp = {0, UINT64_MAX, 0};
    assert_int_equal(cairn_reflex_verify(f->db, note_problem, &sp, &problems, &checked), CAIRN_OK);
    assert_int_equal(problems, 1);
    assert_int_equal(sp.n, 1);
    assert_int_equal(sp.off, want);
    assert_int_equal(sp.code, CAIRN_ECHECKSUM);
}

/* A graph file of an older format version is a stale cache, not damage:
 * verify passes over it, and the next writer replaces it. */
#define GI_TEST_NEWER 99

/* The header's version, with the header sums (format-spec/graph.md)
 * redone as a file of that version would have them: versions 1 and 2 kept
 * a u32 at 8 and sums at 120 and 504; from version 4 on, the common file
 * header holds a u16 and its sum at 56. */
static void set_version(uint8_t *buf, uint32_t v)
{
    uint64_t h;
    if (v >= 4) {
        buf[8] = (uint8_t)v;
        buf[9] = (uint8_t)(v >> 8);
        h = XXH3_64bits(buf, 56);
        for (int k = 0; k < 8; k++)
            buf[56 + k] = (uint8_t)(h >> (8 * k));
        return;
    }
    for (int k = 0; k < 4; k++)
        buf[8 + k] = (uint8_t)(v >> (8 * k));
    h = XXH3_64bits(buf, 120);
    for (int k = 0; k < 8; k++)
        buf[120 + k] = (uint8_t)(h >> (8 * k));
    h = XXH3_64bits(buf, 504);
    for (int k = 0; k < 8; k++)
        buf[504 + k] = (uint8_t)(h >> (8 * k));
}
static void test_older_version_is_rebuilt_not_damage(void **state)
{
    fx *f = *state;
    cairn_causal_path p;
    uint64_t problems = 9;
    int checked = 9;
    char *path;
    size_t len;
    uint8_t *buf = closed_chain_file(f, &path, &len);

    /* a damaged version byte (sums not redone) is damage, not an old file */
    buf[8] = 1;
    assert_int_equal(tu_write_file(path, buf, len), 0);
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX];
    assert_int_equal(cairn_open(&f->db, f->dir, &o, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_reflex_verify(f->db, NULL, NULL, &problems, &checked), CAIRN_OK);
    assert_int_equal(problems, 1);
    assert_int_equal(checked, 1);
    assert_int_equal(cairn_close(f->db), CAIRN_OK);
    set_version(buf, 1); /* a real version-1 header: its sums hold */
    assert_int_equal(tu_write_file(path, buf, len), 0);
    /* verify alone: not counted as checked, not a problem */
    assert_int_equal(cairn_open(&f->db, f->dir, &o, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_reflex_verify(f->db, NULL, NULL, &problems, &checked), CAIRN_OK);
    assert_int_equal(problems, 0);
    assert_int_equal(checked, 0);
    assert_int_equal(cairn_close(f->db), CAIRN_OK);
    /* a newer version is something this build cannot check: a problem */
    set_version(buf, GI_TEST_NEWER);
    assert_int_equal(tu_write_file(path, buf, len), 0);
    assert_int_equal(cairn_open(&f->db, f->dir, &o, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_reflex_verify(f->db, NULL, NULL, &problems, &checked), CAIRN_OK);
    assert_int_equal(problems, 1);
    assert_int_equal(cairn_close(f->db), CAIRN_OK);
    set_version(buf, 1);
    assert_int_equal(tu_write_file(path, buf, len), 0);
    free(buf);
    open_all(f); /* the writer removes the old one and folds the log */
    assert_null(graph_file(f->dir));
    assert_int_equal(cairn_causal_path_find(f->r, "alpha", "gamma", 5, &p), CAIRN_OK);
    assert_true(p.found);
    cairn_causal_path_clear(&p);
    free(path);
}

static void test_persist_across_sealing(void **state)
{
    fx *f = *state;
    cairn_causal_op ops[400];
    char ids[200][CAIRN_NODE_ID_MAX + 1], labels[200][32];
    cairn_causal_path p;
    cairn_reflex_status st;

    /* Enough records to roll several 4 KiB segments and seal them. */
    for (int i = 0; i < 200; i++) {
        snprintf(labels[i], sizeof labels[i], "step %03d of the chain", i);
        memset(&ops[i], 0, sizeof ops[i]);
        ops[i].type = CAIRN_NODE_EVENT;
        ops[i].label = labels[i];
        assert_int_equal(cairn_causal_node_id(f->r, labels[i], ids[i]), CAIRN_OK);
    }
    for (int i = 0; i < 199; i++) {
        memset(&ops[200 + i], 0, sizeof ops[0]);
        ops[200 + i].is_edge = 1;
        ops[200 + i].source = ids[i];
        ops[200 + i].target = ids[i + 1];
        ops[200 + i].weight = 0.5;
    }
    assert_int_equal(cairn_causal_add_batch(f->r, ops, 399), CAIRN_OK);
    assert_int_equal(cairn_seal(f->db), CAIRN_OK);
    reopen(f);
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_int_equal(st.nodes, 200);
    assert_int_equal(st.edges, 199);
    assert_int_equal(cairn_causal_path_find(f->r, "step 010", "step 020", 10, &p), CAIRN_OK);
    assert_true(p.found);
    assert_int_equal(p.depth, 10);
    cairn_causal_path_clear(&p);
    /* A bad op anywhere: nothing of the batch is appended. */
    ops[398].target = "n0123456789abcdef";
    assert_int_equal(cairn_causal_add_batch(f->r, ops, 399), CAIRN_ENOTFOUND);
    assert_non_null(strstr(cairn_reflex_errmsg(f->r), "op 398"));
    assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
    assert_int_equal(st.edges, 199);
}

/* In a process whose locale writes ',' for the decimal point, edge weights
 * still go to the log as JSON numbers and come back exact on replay. */
static void test_weights_survive_a_comma_locale(void **state)
{
    fx *f = *state;
    char a[CAIRN_NODE_ID_MAX + 1], b[CAIRN_NODE_ID_MAX + 1];
    char *dir = tu_mkdtemp("locale");
    cairn_causal_edge e;

    if (!tu_comma_numeric(dir))
        fail_msg("no locale with a ',' decimal point could be made (localedef, de_DE)");
    node(f, CAIRN_NODE_DECISION, "A", NULL, a);
    node(f, CAIRN_NODE_OUTCOME, "B", NULL, b);
    assert_int_equal(cairn_causal_add_edge(f->r, a, b, CAIRN_EDGE_CAUSES, 0.3, NULL, NULL),
                     CAIRN_OK);
    reopen(f); /* a replay of the log: no graph file for so few records */
    {
        cairn_reflex_status st;
        assert_int_equal(cairn_reflex_status_get(f->r, &st), CAIRN_OK);
        assert_int_equal(st.skipped, 0);
        assert_int_equal(st.edges, 1);
    }
    assert_int_equal(cairn_causal_add_edge(f->r, a, b, CAIRN_EDGE_CAUSES, 0.3, NULL, &e), CAIRN_OK);
    assert_int_equal(e.evidence_count, 2);
    assert_true(e.weight == 0.3);
    cairn_causal_edge_clear(&e);
    tu_c_numeric();
    tu_rmrf(dir);
    free(dir);
}

typedef struct rwaiter {
    cairn_reflex *holder, *r; /* the handle holding the turn, the waiting one */
    int rc;
} rwaiter;

static void add_50(void *p)
{
    rwaiter *w = p;
    for (int i = 0; i < 50; i++) {
        char label[64];
        snprintf(label, sizeof label, "held turn node %d", i);
        assert_int_equal(cairn_causal_add_node(w->holder, CAIRN_NODE_EVENT, label, NULL, NULL),
                         CAIRN_OK);
    }
}

static void *add_after_the_wait(void *p)
{
    rwaiter *w = p;
    __atomic_store_n(&w->rc,
                     cairn_causal_add_node(w->r, CAIRN_NODE_EVENT, "added after the wait", NULL, NULL),
                     __ATOMIC_SEQ_CST);
    return NULL;
}

static uint64_t rx_folded(void *p)
{
    rwaiter *w = p;
    uint64_t v;
    pthread_mutex_lock(&w->r->mu);
    v = w->r->folded;
    pthread_mutex_unlock(&w->r->mu);
    return v;
}

/* A reflexion writer waiting for another handle's turn folds what that one
 * appends meanwhile, before the lock is let go. */
static void test_a_waiting_writer_folds_what_the_holder_appends(void **state)
{
    fx *f = *state;
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db2 = NULL;
    cairn_causal_node n;
    rwaiter w = {f->r, NULL, -1};
    tu_held_turn h = {f->db, add_50, add_after_the_wait, rx_folded, &w};

    o.busy_timeout_ms = 20000;
    if (cairn_open(&db2, f->dir, &o, err, sizeof err) != CAIRN_OK)
        fail_msg("cairn_open: %s", err);
    assert_int_equal(cairn_reflex_open(db2, &w.r), CAIRN_OK);
    assert_true(tu_folds_while_held(&h)); /* folded while the turn was held */
    assert_int_equal(w.rc, CAIRN_OK);
    /* the waiter's view holds the holder's nodes and its own */
    assert_int_equal(cairn_causal_add_node(w.r, CAIRN_NODE_EVENT, "held turn node 7", NULL, &n),
                     CAIRN_OK);
    assert_int_equal(n.frequency, 2);
    cairn_causal_node_clear(&n);
    cairn_reflex_close(w.r);
    assert_int_equal(cairn_close(db2), CAIRN_OK);
}

/* An update folds an episode an imported graph already holds: what the
 * graph has from it is not counted again (frequency 1, one episode). */
static void test_update_does_not_count_an_imported_episode_twice(void **state)
{
    fx *f = *state;
    static const char graph[] =
        "{\"nodes\":[{\"id\":\"o\",\"type\":\"outcome\",\"label\":\"Outcome: success - T\","
        "\"episodes\":[\"episode-S\"]}],\"edges\":[],\"patterns\":[{\"id\":\"p\",\"name\":"
        "\"design pattern\",\"trigger\":\"t\",\"action\":\"a\",\"success_rate\":1.0,"
        "\"occurrences\":1,\"episodes\":[\"episode-S\"],\"contributions\":{\"episode-S\":1.0}}]}";
    static const char ep[] = "{\"session\":\"S\",\"task\":\"T\",\"outcome\":\"success\","
                             "\"decisions\":[{\"type\":\"design\",\"chosen\":\"X\"}]}";
    cairn_pattern *pats = NULL;
    size_t np = 0;
    cairn_causal_import_stats is;
    cairn_causal_update_stats us;
    cairn_causal_node n;
    char id[CAIRN_NODE_ID_MAX + 1];

    assert_int_equal(cairn_causal_import(f->r, graph, strlen(graph), &is), CAIRN_OK);
    assert_int_equal(cairn_episode_put(f->r, ep, strlen(ep), 0, NULL), CAIRN_OK);
    assert_int_equal(cairn_causal_update(f->r, NULL, &us), CAIRN_OK);
    assert_int_equal(us.episodes_processed, 1);
    assert_int_equal(cairn_causal_node_id(f->r, "Outcome: success - T", id), CAIRN_OK);
    memset(&n, 0, sizeof n);
    assert_int_equal(cairn_causal_get_node(f->r, id, &n), CAIRN_OK);
    assert_int_equal(n.frequency, 1);
    assert_int_equal(n.n_episodes, 1);
    assert_string_equal(n.episodes[0], "episode-S");
    cairn_causal_node_clear(&n);
    assert_int_equal(cairn_pattern_list(f->r, 0, 1, &pats, &np), CAIRN_OK);
    assert_int_equal(np, 1);
    assert_string_equal(pats[0].name, "design pattern");
    assert_int_equal(pats[0].occurrences, 1); /* the episode's occurrence, once */
    cairn_patterns_free(pats, np);
    /* and after a replay from the log, the same */
    close_all(f);
    open_all(f);
    memset(&n, 0, sizeof n);
    assert_int_equal(cairn_causal_get_node(f->r, id, &n), CAIRN_OK);
    assert_int_equal(n.frequency, 1);
    cairn_causal_node_clear(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_node_dedup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_label_rule_of_an_older_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edge_running_average, setup, teardown),
        cmocka_unit_test_setup_teardown(test_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_paths_file_and_delta, setup, teardown),
        cmocka_unit_test_setup_teardown(test_label_lookup_matches_a_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wide_fanout_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_patterns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_episodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_episode_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_idempotent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_episode_parts_dropped_and_noted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_does_not_count_an_imported_episode_twice, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_import, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_breaking_the_rule_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import_refuses_text_that_breaks_the_rule, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_deterministic_rebuild, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_file_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_names_damage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_older_version_is_rebuilt_not_damage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_persist_across_sealing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_waiting_writer_folds_what_the_holder_appends, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_weights_survive_a_comma_locale, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
