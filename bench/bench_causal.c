/*
 * bench_causal.c - the causal graph (issue 5): cairn's reflexion API next to
 * SQLite (an indexed edge table and a recursive CTE), same run, same graph,
 * same queries. Public API only. Never part of `make test`.
 *
 *   graph     N nodes labelled "node-0000123-x" (fixed width: no label is a
 *             substring of another), each with M/N out-edges to distinct
 *             random other nodes (splitmix64, fixed seed); made once, before
 *             any clock starts
 *   add       cairn_causal_add_batch, `--batch` ops per call, durability
 *             batch: all nodes, then cairn_causal_node_id for every label
 *             (timed on its own), then all edges in source order; SQLite
 *             (WAL, synchronous NORMAL) the same rows, prepared INSERTs,
 *             `--batch` rows per transaction. Then `--single` nodes and
 *             edges through cairn_causal_add_node / _add_edge, one per call,
 *             into a second store, next to SQLite with one row per
 *             transaction
 *   session   10,000 graph records after the graph file, the close that
 *             writes them (a generation) and the open that folds it
 *   store     cairn_reflex_checkpoint (graph file write) time and size; the
 *             store closed, then cairn_open + cairn_reflex_open timed; the
 *             SQLite file's size
 *   path      Q queries (90 %: the target is the end of a random walk of
 *             2..5 steps from the source; 10 %: a random target, mostly
 *             unreachable): cairn_causal_path_find(max_depth 5) + _clear,
 *             and SQLite: two label lookups (exact match) and a recursive
 *             CTE BFS bounded by depth 5. Each query timed alone; median and
 *             p99; two passes over the same queries (the first right after
 *             the open). Found / depth must agree between both engines and
 *             with a plain BFS in the bench (the truth) for every query;
 *             every path cairn returns is checked edge by edge against the
 *             graph. Any disagreement is printed and the exit status is 1.
 *             Diagnostics: path_find(x, x) (the label lookups alone), and
 *             the first `--delta-queries` asked of the writer before the
 *             checkpoint (the RAM delta, no graph file)
 *
 * usage: bench_causal [--nodes N] [--edges M] [--queries Q]
 *                     [--sqlite-queries Q] [--delta-queries Q] [--batch B] [--single S]
 *                     [--sqlite-cache-mb MB (1024; 0: SQLite's default)]
 *                     [--dir DIR] [--seed S] [--keep]
 * Output: one JSON line on stdout, a summary with PASS/FAIL on stderr.
 */
#include <dirent.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_util.h"
#include "cairn.h"

#define MAX_DEPTH 5
#define LBL 24 /* bytes per label slot: "node-" + digits + "-x" + NUL */


static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        bench_die("out of memory (%zu bytes)", n);
    return p;
}

static uint64_t rng = 0xCA05A1;
static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void rm_rf(const char *path)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0)
        bench_die("cannot remove %s", path);
}

/* Bytes of the files under path (a file or a directory tree). */
static uint64_t du(const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *de;
    uint64_t sum = 0;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    if ((d = opendir(path)) == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        char sub[2048];
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
        sum += du(sub);
    }
    closedir(d);
    return sum;
}

/* ---- the graph ------------------------------------------------------------ */

static size_t n_nodes, n_edges;
static uint32_t *off; /* CSR: the out-edges of v are dst[off[v] .. off[v + 1]) */
static uint32_t *dst;
static char *labels;

static int keep; /* --keep: leave the main store and database in DIR */

static const char *label(uint32_t v)
{
    return labels + (size_t)v * LBL;
}

static void make_graph(void)
{
    size_t deg = n_edges / n_nodes, extra = n_edges % n_nodes, k = 0;
    int width = 1;
    for (size_t x = n_nodes - 1; x >= 10; x /= 10)
        width++;
    if (width < 7)
        width = 7;
    off = xmalloc((n_nodes + 1) * sizeof *off);
    dst = xmalloc(n_edges * sizeof *dst);
    labels = xmalloc(n_nodes * LBL);
    for (size_t v = 0; v < n_nodes; v++) {
        size_t d = deg + (v < extra);
        char *l = labels + v * LBL;
        size_t x = v;
        memcpy(l, "node-", 5);
        for (int i = width; i-- > 0; x /= 10)
            l[5 + i] = (char)('0' + x % 10);
        memcpy(l + 5 + width, "-x", 3);
        off[v] = (uint32_t)k;
        for (size_t j = 0; j < d; j++) {
            uint32_t t;
            int dup;
            do {
                t = (uint32_t)(rnd() % n_nodes);
                dup = t == v;
                for (size_t i = off[v]; i < k && !dup; i++)
                    dup = dst[i] == t;
            } while (dup);
            dst[k++] = t;
        }
    }
    off[n_nodes] = (uint32_t)k;
}

static int has_edge(uint32_t a, uint32_t b)
{
    for (uint32_t e = off[a]; e < off[a + 1]; e++)
        if (dst[e] == b)
            return 1;
    return 0;
}

/* The truth: a plain one-sided BFS over the bench's own CSR; the shortest
 * path length from a to b within MAX_DEPTH, or -1. */
static uint32_t *stamp, stamp_now, *bq;
static int truth_depth(uint32_t a, uint32_t b)
{
    size_t h = 0, t = 0;
    if (a == b)
        return 0;
    stamp_now++;
    stamp[a] = stamp_now;
    bq[t++] = a;
    for (int depth = 1; depth <= MAX_DEPTH; depth++) {
        size_t end = t;
        for (; h < end; h++) {
            uint32_t v = bq[h];
            for (uint32_t e = off[v]; e < off[v + 1]; e++) {
                uint32_t u = dst[e];
                if (u == b)
                    return depth;
                if (stamp[u] != stamp_now) {
                    stamp[u] = stamp_now;
                    bq[t++] = u;
                }
            }
        }
    }
    return -1;
}

/* ---- the queries ----------------------------------------------------------- */

typedef struct query {
    uint32_t from, to;
    int walk;       /* steps of the random walk that gave `to`; 0: a random target */
    int truth;      /* shortest path length, -1: none within MAX_DEPTH */
    int c_found, c_depth, s_found, s_depth;
    int d_depth;    /* cairn before the checkpoint (RAM delta), the first --delta-queries */
} query;

static query *make_queries(size_t q)
{
    query *qs = xmalloc(q * sizeof *qs);
    memset(qs, 0, q * sizeof *qs);
    for (size_t i = 0; i < q; i++) {
        uint32_t v = (uint32_t)(rnd() % n_nodes);
        qs[i].from = v;
        if (rnd() % 10 == 0) {
            qs[i].to = (uint32_t)(rnd() % n_nodes);
        } else {
            qs[i].walk = 2 + (int)(rnd() % 4);
            for (int s = 0; s < qs[i].walk && off[v + 1] > off[v]; s++)
                v = dst[off[v] + rnd() % (off[v + 1] - off[v])];
            qs[i].to = v;
        }
        qs[i].truth = truth_depth(qs[i].from, qs[i].to);
    }
    return qs;
}

/* ---- cairn ----------------------------------------------------------------- */

static cairn_db *store_open(const char *path, int create)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db;
    char err[CAIRN_ERRMSG_MAX];
    o.create = create;
    o.durability = CAIRN_DURABILITY_BATCH;
    if (cairn_open(&db, path, &o, err, sizeof err) != CAIRN_OK)
        bench_die("cairn_open %s: %s", path, err);
    return db;
}

static cairn_reflex *reflex_open(cairn_db *db)
{
    cairn_reflex *r;
    int rc = cairn_reflex_open(db, &r);
    if (rc != CAIRN_OK)
        bench_die("cairn_reflex_open: %s (%s)", cairn_strerror(rc), cairn_errmsg(db));
    return r;
}

static void rx_check(cairn_reflex *r, int rc, const char *what)
{
    if (rc != CAIRN_OK)
        bench_die("%s: %s (%s)", what, cairn_strerror(rc), cairn_reflex_errmsg(r));
}

/* The node index of a label "node-<digits>-x". */
static uint32_t label_index(const char *s)
{
    if (s == NULL || strncmp(s, "node-", 5) != 0)
        return UINT32_MAX;
    return (uint32_t)strtoul(s + 5, NULL, 10);
}

/* cairn's path for q against the graph: source, target, length and every
 * edge. The first problem into why (or "" when it holds). */
static void check_path(const query *q, const cairn_causal_path *p, char *why, size_t cap)
{
    why[0] = 0;
    if (!p->found)
        return;
    if (p->n != (size_t)p->depth + 1) {
        snprintf(why, cap, "path has %zu nodes for depth %u", p->n, p->depth);
        return;
    }
    if (label_index(p->path[0].label) != q->from || label_index(p->path[p->n - 1].label) != q->to) {
        snprintf(why, cap, "path runs %s -> %s", p->path[0].label, p->path[p->n - 1].label);
        return;
    }
    for (size_t i = 0; i + 1 < p->n; i++) {
        uint32_t a = label_index(p->path[i].label), b = label_index(p->path[i + 1].label);
        if (a >= n_nodes || b >= n_nodes || !has_edge(a, b)) {
            snprintf(why, cap, "step %zu %s -> %s is no edge", i, p->path[i].label,
                     p->path[i + 1].label);
            return;
        }
    }
}

typedef struct cairn_res {
    double nodes_s, ids_s, edges_s, ckpt_s, close_s, db_open_s, rx_open_s, first_query_s;
    double single_nodes_s, single_edges_s;
    double gen_close_s, gen_open_s; /* a session's changes after the graph file */
    uint64_t gen_bytes;
    char gen_file[64];
    uint64_t graph_bytes, store_bytes;
    char graph_file[64];
    double *qt[2], *rt; /* per-query seconds: path (two passes), resolution only (from = to) */
    double *dt;         /* the same before the checkpoint, on the RAM delta */
    size_t bad_paths;
} cairn_res;

static void cairn_side(const char *dir, size_t batch, query *qs, size_t nq, size_t ndq,
                       size_t single, cairn_res *cr)
{
    char path[1100], gpath[1200], (*ids)[CAIRN_NODE_ID_MAX + 1];
    cairn_causal_op *ops = xmalloc(batch * sizeof *ops);
    cairn_reflex_status st;
    cairn_db *db;
    cairn_reflex *r;
    double t0;
    uint32_t v = 0;

    snprintf(path, sizeof path, "%s/causal-cairn", dir);
    rm_rf(path);
    db = store_open(path, 1);
    r = reflex_open(db);
    /* nodes */
    t0 = bench_now();
    for (size_t i = 0; i < n_nodes; i += batch) {
        size_t n = n_nodes - i < batch ? n_nodes - i : batch;
        for (size_t k = 0; k < n; k++) {
            memset(&ops[k], 0, sizeof ops[k]);
            ops[k].type = CAIRN_NODE_EVENT;
            ops[k].label = label((uint32_t)(i + k));
        }
        rx_check(r, cairn_causal_add_batch(r, ops, n), "cairn_causal_add_batch (nodes)");
    }
    cr->nodes_s = bench_now() - t0;
    /* the ids the edges name */
    ids = xmalloc(n_nodes * sizeof *ids);
    t0 = bench_now();
    for (size_t i = 0; i < n_nodes; i++)
        rx_check(r, cairn_causal_node_id(r, label((uint32_t)i), ids[i]), "cairn_causal_node_id");
    cr->ids_s = bench_now() - t0;
    /* edges, in source order */
    t0 = bench_now();
    for (size_t e = 0; e < n_edges; e += batch) {
        size_t n = n_edges - e < batch ? n_edges - e : batch;
        for (size_t k = 0; k < n; k++) {
            while (off[v + 1] <= e + k)
                v++;
            memset(&ops[k], 0, sizeof ops[k]);
            ops[k].is_edge = 1;
            ops[k].type = CAIRN_EDGE_CAUSES;
            ops[k].source = ids[v];
            ops[k].target = ids[dst[e + k]];
            ops[k].weight = 0.5;
        }
        rx_check(r, cairn_causal_add_batch(r, ops, n), "cairn_causal_add_batch (edges)");
    }
    cr->edges_s = bench_now() - t0;
    rx_check(r, cairn_reflex_status_get(r, &st), "cairn_reflex_status_get");
    if (st.nodes != n_nodes || st.edges != n_edges)
        bench_die("after the adds cairn holds %" PRIu64 " nodes and %" PRIu64 " edges, not %zu and %zu",
            st.nodes, st.edges, n_nodes, n_edges);
    /* the first ndq queries on the writer's RAM state, before any graph
     * file: label lookups scan every label there */
    cr->dt = xmalloc((ndq ? ndq : 1) * sizeof(double));
    for (size_t i = 0; i < ndq; i++) {
        cairn_causal_path p;
        char why[256];
        int rc;
        t0 = bench_now();
        rc = cairn_causal_path_find(r, label(qs[i].from), label(qs[i].to), MAX_DEPTH, &p);
        cr->dt[i] = bench_now() - t0;
        rx_check(r, rc, "cairn_causal_path_find (before the checkpoint)");
        qs[i].d_depth = p.found ? (int)p.depth : -1;
        check_path(&qs[i], &p, why, sizeof why);
        if (why[0]) {
            cr->bad_paths++;
            fprintf(stderr, "bench_causal: BAD PATH query %zu (%s -> %s), before the "
                    "checkpoint: %s\n", i, label(qs[i].from), label(qs[i].to), why);
        }
        cairn_causal_path_clear(&p);
    }
    /* the graph file */
    t0 = bench_now();
    rx_check(r, cairn_reflex_checkpoint(r), "cairn_reflex_checkpoint");
    cr->ckpt_s = bench_now() - t0;
    rx_check(r, cairn_reflex_status_get(r, &st), "cairn_reflex_status_get");
    snprintf(cr->graph_file, sizeof cr->graph_file, "%s", st.graph_file);
    snprintf(gpath, sizeof gpath, "%s/%s", path, st.graph_file);
    cr->graph_bytes = du(gpath);
    if (st.graph_file[0] == 0 || cr->graph_bytes == 0)
        bench_die("no graph file after cairn_reflex_checkpoint (status names \"%s\")", st.graph_file);
    t0 = bench_now();
    cairn_reflex_close(r);
    if (cairn_close(db) != CAIRN_OK)
        bench_die("cairn_close");
    cr->close_s = bench_now() - t0;
    /* reopen */
    t0 = bench_now();
    db = store_open(path, 0);
    cr->db_open_s = bench_now() - t0;
    t0 = bench_now();
    r = reflex_open(db);
    cr->rx_open_s = bench_now() - t0;
    rx_check(r, cairn_reflex_status_get(r, &st), "cairn_reflex_status_get");
    if (st.nodes != n_nodes || st.edges != n_edges)
        bench_die("after reopening cairn holds %" PRIu64 " nodes and %" PRIu64 " edges", st.nodes,
            st.edges);
    if (st.delta_records != 0)
        fprintf(stderr, "bench_causal: note: %" PRIu64 " records folded in RAM after reopening\n",
                st.delta_records);
    /* queries, two passes: the first right after the open (its pages of
     * the mapping touched for the first time), the second over the same
     * queries again; every answer checked in both */
    for (int pass = 0; pass < 2; pass++) {
        cr->qt[pass] = xmalloc(nq * sizeof(double));
        for (size_t i = 0; i < nq; i++) {
            cairn_causal_path p;
            char why[256];
            double t1, t2, t3;
            int rc, depth;
            t0 = bench_now();
            rc = cairn_causal_path_find(r, label(qs[i].from), label(qs[i].to), MAX_DEPTH, &p);
            t1 = bench_now();
            rx_check(r, rc, "cairn_causal_path_find");
            if (i == 0 && pass == 0)
                cr->first_query_s = t1 - t0;
            depth = p.found ? (int)p.depth : -1;
            if (pass == 0) {
                qs[i].c_found = p.found;
                qs[i].c_depth = depth;
            } else if (depth != qs[i].c_depth) {
                snprintf(why, sizeof why, "depth %d in the first pass, %d in the second",
                         qs[i].c_depth, depth);
            }
            if (pass == 0 || depth == qs[i].c_depth)
                check_path(&qs[i], &p, why, sizeof why);
            if (why[0]) {
                cr->bad_paths++;
                fprintf(stderr, "bench_causal: BAD PATH query %zu (%s -> %s), pass %d: %s\n", i,
                        label(qs[i].from), label(qs[i].to), pass + 1, why);
            }
            if (!p.found && strncmp(p.error, "No path found", 13) != 0)
                fprintf(stderr, "bench_causal: query %zu (%s -> %s): not found: \"%s\"\n", i,
                        label(qs[i].from), label(qs[i].to), p.error);
            t2 = bench_now();
            cairn_causal_path_clear(&p);
            t3 = bench_now();
            cr->qt[pass][i] = (t1 - t0) + (t3 - t2);
        }
    }
    cr->rt = xmalloc(nq * sizeof(double));
    /* the label lookups alone: from = to (depth 0) */
    for (size_t i = 0; i < nq; i++) {
        cairn_causal_path p;
        int rc;
        t0 = bench_now();
        rc = cairn_causal_path_find(r, label(qs[i].from), label(qs[i].from), MAX_DEPTH, &p);
        cairn_causal_path_clear(&p);
        cr->rt[i] = bench_now() - t0;
        rx_check(r, rc, "cairn_causal_path_find");
    }
    /* A session's changes after the graph file, 10,000 graph records: 2,500
     * new nodes, 2,500 edges among them, 5,000 edges of the graph seen
     * again (evidence + 1: no path changes), then the close that writes
     * them (a generation, not the whole file) and an open that folds it. */
    {
        enum { NEWN = 2500, REPEAT = 5000 };
        static char nid[NEWN][CAIRN_NODE_ID_MAX + 1], nlabel[NEWN][32];
        uint64_t save = rng;
        rng = 0x6E4E;
        for (size_t i = 0; i < NEWN; i += batch) {
            size_t n = NEWN - i < batch ? NEWN - i : batch;
            for (size_t k = 0; k < n; k++) {
                memset(&ops[k], 0, sizeof ops[k]);
                ops[k].type = CAIRN_NODE_EVENT;
                snprintf(nlabel[i + k], sizeof nlabel[i + k], "session-%07zu-x", i + k);
                ops[k].label = nlabel[i + k];
            }
            rx_check(r, cairn_causal_add_batch(r, ops, n), "cairn_causal_add_batch (session nodes)");
        }
        for (size_t i = 0; i < NEWN; i++)
            rx_check(r, cairn_causal_node_id(r, nlabel[i], nid[i]),
                     "cairn_causal_node_id");
        for (size_t i = 0; i < NEWN + REPEAT; i += batch) {
            size_t n = NEWN + REPEAT - i < batch ? NEWN + REPEAT - i : batch;
            for (size_t k = 0; k < n; k++) {
                memset(&ops[k], 0, sizeof ops[k]);
                ops[k].is_edge = 1;
                ops[k].type = CAIRN_EDGE_CAUSES;
                ops[k].weight = 0.5;
                if (i + k < NEWN) {
                    ops[k].source = nid[i + k];
                    ops[k].target = nid[(i + k + 1 + rnd() % (NEWN - 1)) % NEWN];
                } else {
                    size_t e = rnd() % n_edges;
                    uint32_t src = 0, lo = 0, hi = (uint32_t)n_nodes;
                    while (lo < hi) { /* the source of edge e: off[src] <= e < off[src + 1] */
                        uint32_t mid = lo + (hi - lo) / 2;
                        if (off[mid + 1] <= e)
                            lo = mid + 1;
                        else
                            hi = mid;
                    }
                    src = lo;
                    ops[k].source = ids[src];
                    ops[k].target = ids[dst[e]];
                }
            }
            rx_check(r, cairn_causal_add_batch(r, ops, n), "cairn_causal_add_batch (session edges)");
        }
        rng = save;
        t0 = bench_now();
        cairn_reflex_close(r);
        if (cairn_close(db) != CAIRN_OK)
            bench_die("cairn_close");
        cr->gen_close_s = bench_now() - t0;
        t0 = bench_now();
        db = store_open(path, 0);
        r = reflex_open(db);
        cr->gen_open_s = bench_now() - t0;
        rx_check(r, cairn_reflex_status_get(r, &st), "cairn_reflex_status_get");
        snprintf(cr->gen_file, sizeof cr->gen_file, "%s", st.graph_file);
        snprintf(gpath, sizeof gpath, "%s/%s", path, st.graph_file);
        cr->gen_bytes = du(gpath);
        if (st.nodes != n_nodes + NEWN || st.delta_records != 0)
            bench_die("after the session's close and an open cairn holds %" PRIu64 " nodes and "
                      "%" PRIu64 " records past its files", st.nodes, st.delta_records);
        for (size_t i = 0; i < nq && i < 100; i++) { /* the answers stand */
            cairn_causal_path p;
            char why[256];
            rx_check(r, cairn_causal_path_find(r, label(qs[i].from), label(qs[i].to), MAX_DEPTH, &p),
                     "cairn_causal_path_find (after the session)");
            check_path(&qs[i], &p, why, sizeof why);
            if (why[0] || (p.found ? (int)p.depth : -1) != qs[i].c_depth) {
                cr->bad_paths++;
                fprintf(stderr, "bench_causal: BAD PATH query %zu after the session: %s\n", i,
                        why[0] ? why : "another depth");
            }
            cairn_causal_path_clear(&p);
        }
    }
    cairn_reflex_close(r);
    if (cairn_close(db) != CAIRN_OK)
        bench_die("cairn_close");
    cr->store_bytes = du(path);
    if (!keep)
        rm_rf(path);

    /* single calls, into a store of their own: `single` nodes, then one
     * edge from each to a random other one of them */
    snprintf(path, sizeof path, "%s/causal-cairn-single", dir);
    rm_rf(path);
    db = store_open(path, 1);
    r = reflex_open(db);
    t0 = bench_now();
    for (size_t i = 0; i < single; i++)
        rx_check(r, cairn_causal_add_node(r, CAIRN_NODE_EVENT, label((uint32_t)i), NULL, NULL),
                 "cairn_causal_add_node");
    cr->single_nodes_s = bench_now() - t0;
    for (size_t i = 0; i < single; i++)
        rx_check(r, cairn_causal_node_id(r, label((uint32_t)i), ids[i]), "cairn_causal_node_id");
    {
        uint64_t save = rng;
        rng = 0x51D6E;
        t0 = bench_now();
        for (size_t i = 0; i < single; i++) {
            size_t j = (i + 1 + rnd() % (single - 1)) % single;
            rx_check(r, cairn_causal_add_edge(r, ids[i], ids[j], CAIRN_EDGE_CAUSES, 0.5, NULL, NULL),
                     "cairn_causal_add_edge");
        }
        cr->single_edges_s = bench_now() - t0;
        rng = save;
    }
    rx_check(r, cairn_reflex_status_get(r, &st), "cairn_reflex_status_get");
    if (st.nodes != single || st.edges != single)
        bench_die("single calls: cairn holds %" PRIu64 " nodes and %" PRIu64 " edges, not %zu",
            st.nodes, st.edges, single);
    cairn_reflex_close(r);
    cairn_close(db);
    rm_rf(path);
    free(ids);
    free(ops);
}

/* ---- SQLite ---------------------------------------------------------------- */

typedef struct sqlite_res {
    double nodes_s, edges_s, single_nodes_s, single_edges_s, first_query_s;
    uint64_t db_bytes;
    double *qt[2];
} sqlite_res;

static void sq_exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        bench_die("sqlite: %s: %s", sql, err ? err : "?");
}

static sqlite3_stmt *sq_prepare(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        bench_die("sqlite prepare: %s: %s", sql, sqlite3_errmsg(db));
    return st;
}

static sqlite3 *sq_create(const char *path, int cache_mb)
{
    char buf[1200];
    sqlite3 *db;
    snprintf(buf, sizeof buf, "%s", path);
    rm_rf(buf);
    snprintf(buf, sizeof buf, "%s-wal", path);
    rm_rf(buf);
    snprintf(buf, sizeof buf, "%s-shm", path);
    rm_rf(buf);
    if (sqlite3_open(path, &db) != SQLITE_OK)
        bench_die("sqlite3_open %s", path);
    sq_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                "CREATE TABLE nodes(id INTEGER PRIMARY KEY, label TEXT UNIQUE);"
                "CREATE TABLE edges(src INTEGER NOT NULL, dst INTEGER NOT NULL);"
                "CREATE INDEX edges_src_dst ON edges(src, dst);");
    if (cache_mb > 0) {
        snprintf(buf, sizeof buf, "PRAGMA cache_size=-%d", cache_mb * 1024);
        sq_exec(db, buf);
    }
    return db;
}

/* Label -> id, exact match; -1 if none. */
static int64_t sq_lookup(sqlite3_stmt *st, const char *lbl)
{
    int64_t id = -1;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, lbl, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    return id;
}

/* The BFS: (node, depth) rows, UNION to drop repeats (cuts cycles), the
 * queue ordered by depth so rows come out level by level, nothing expanded
 * past depth ?3 or from the target; the first row of the target is the
 * shortest depth. */
static const char CTE[] =
    "WITH RECURSIVE bfs(id, d) AS ("
    " SELECT ?1, 0"
    " UNION"
    " SELECT e.dst, bfs.d + 1 FROM bfs JOIN edges e ON e.src = bfs.id"
    "  WHERE bfs.d < ?3 AND bfs.id <> ?2"
    " ORDER BY 2"
    ") SELECT d FROM bfs WHERE id = ?2 LIMIT 1";

static void sqlite_side(const char *dir, size_t batch, query *qs, size_t nq, size_t single,
                        int cache_mb, sqlite_res *sr)
{
    char path[1100];
    sqlite3 *db;
    sqlite3_stmt *ins, *sel, *cte;
    double t0;
    uint32_t v = 0;

    snprintf(path, sizeof path, "%s/causal-sqlite.db", dir);
    db = sq_create(path, cache_mb);
    ins = sq_prepare(db, "INSERT INTO nodes(id, label) VALUES (?1, ?2)");
    t0 = bench_now();
    for (size_t i = 0; i < n_nodes; i++) {
        if (i % batch == 0)
            sq_exec(db, i ? "COMMIT; BEGIN" : "BEGIN");
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, (sqlite3_int64)i + 1);
        sqlite3_bind_text(ins, 2, label((uint32_t)i), -1, SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE)
            bench_die("sqlite insert node: %s", sqlite3_errmsg(db));
    }
    sq_exec(db, "COMMIT");
    sr->nodes_s = bench_now() - t0;
    sqlite3_finalize(ins);
    ins = sq_prepare(db, "INSERT INTO edges(src, dst) VALUES (?1, ?2)");
    t0 = bench_now();
    for (size_t e = 0; e < n_edges; e++) {
        while (off[v + 1] <= e)
            v++;
        if (e % batch == 0)
            sq_exec(db, e ? "COMMIT; BEGIN" : "BEGIN");
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, (sqlite3_int64)v + 1);
        sqlite3_bind_int64(ins, 2, (sqlite3_int64)dst[e] + 1);
        if (sqlite3_step(ins) != SQLITE_DONE)
            bench_die("sqlite insert edge: %s", sqlite3_errmsg(db));
    }
    sq_exec(db, "COMMIT");
    sr->edges_s = bench_now() - t0;
    sqlite3_finalize(ins);
    sq_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    sr->db_bytes = du(path);
    /* queries */
    sel = sq_prepare(db, "SELECT id FROM nodes WHERE label = ?1");
    cte = sq_prepare(db, CTE);
    for (int pass = 0; pass < 2; pass++) {
        sr->qt[pass] = xmalloc((nq ? nq : 1) * sizeof(double));
        for (size_t i = 0; i < nq; i++) {
            int64_t a, b;
            int rc, depth;
            t0 = bench_now();
            a = sq_lookup(sel, label(qs[i].from));
            b = sq_lookup(sel, label(qs[i].to));
            if (a < 0 || b < 0)
                bench_die("sqlite: no node %s or %s", label(qs[i].from), label(qs[i].to));
            sqlite3_reset(cte);
            sqlite3_bind_int64(cte, 1, a);
            sqlite3_bind_int64(cte, 2, b);
            sqlite3_bind_int(cte, 3, MAX_DEPTH);
            rc = sqlite3_step(cte);
            depth = rc == SQLITE_ROW ? sqlite3_column_int(cte, 0) : -1;
            sqlite3_reset(cte);
            sr->qt[pass][i] = bench_now() - t0;
            if (i == 0 && pass == 0)
                sr->first_query_s = sr->qt[pass][i];
            if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                bench_die("sqlite query: %s", sqlite3_errmsg(db));
            if (pass == 0) {
                qs[i].s_found = rc == SQLITE_ROW;
                qs[i].s_depth = depth;
            } else if (depth != qs[i].s_depth) {
                bench_die("sqlite query %zu: depth %d in the first pass, %d in the second", i,
                    qs[i].s_depth, depth);
            }
        }
    }
    sqlite3_finalize(sel);
    sqlite3_finalize(cte);
    sqlite3_close(db);
    if (!keep)
        rm_rf(path);

    /* single rows, one per transaction (autocommit) */
    snprintf(path, sizeof path, "%s/causal-sqlite-single.db", dir);
    db = sq_create(path, cache_mb);
    ins = sq_prepare(db, "INSERT INTO nodes(id, label) VALUES (?1, ?2)");
    t0 = bench_now();
    for (size_t i = 0; i < single; i++) {
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, (sqlite3_int64)i + 1);
        sqlite3_bind_text(ins, 2, label((uint32_t)i), -1, SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE)
            bench_die("sqlite insert node: %s", sqlite3_errmsg(db));
    }
    sr->single_nodes_s = bench_now() - t0;
    sqlite3_finalize(ins);
    ins = sq_prepare(db, "INSERT INTO edges(src, dst) VALUES (?1, ?2)");
    {
        uint64_t save = rng;
        rng = 0x51D6E; /* the same edges as cairn's single calls */
        t0 = bench_now();
        for (size_t i = 0; i < single; i++) {
            size_t j = (i + 1 + rnd() % (single - 1)) % single;
            sqlite3_reset(ins);
            sqlite3_bind_int64(ins, 1, (sqlite3_int64)i + 1);
            sqlite3_bind_int64(ins, 2, (sqlite3_int64)j + 1);
            if (sqlite3_step(ins) != SQLITE_DONE)
                bench_die("sqlite insert edge: %s", sqlite3_errmsg(db));
        }
        sr->single_edges_s = bench_now() - t0;
        rng = save;
    }
    sqlite3_finalize(ins);
    sqlite3_close(db);
    rm_rf(path);
}

/* ---- main ------------------------------------------------------------------ */

static double pct(const double *sorted, size_t n, int p)
{
    return n ? sorted[n * (size_t)p / 100 < n ? n * (size_t)p / 100 : n - 1] : 0;
}

static const char *verdict(int ok)
{
    return ok ? "PASS" : "FAIL";
}

int main(int argc, char **argv)
{
    size_t nq = 1000, nsq = (size_t)-1, ndq = 100, batch = 1000, single = 100000;
    int cache_mb = 1024; /* SQLite page cache: the whole file fits (its default is 2 MB) */
    const char *dir = "build/bench-tmp";
    cairn_res cr;
    sqlite_res sr;
    double t0, gen_s, cmed[2], cp99[2], smed[2], sp99[2], rmed, rp99, cmed_s[2], cp99_s[2], dmed = 0, dp99 = 0;
    size_t mism = 0, truth_found = 0, c_found = 0, s_found = 0, c_found_s = 0, hist[MAX_DEPTH + 2];
    query *qs;
    uint64_t seed;

    bench_name = "bench_causal";
    n_nodes = 1000000;
    n_edges = 5000000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc)
            n_nodes = (size_t)strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--edges") == 0 && i + 1 < argc)
            n_edges = (size_t)strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--queries") == 0 && i + 1 < argc)
            nq = (size_t)strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--delta-queries") == 0 && i + 1 < argc)
            ndq = (size_t)strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--sqlite-queries") == 0 && i + 1 < argc)
            nsq = (size_t)strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
            batch = (size_t)strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--single") == 0 && i + 1 < argc)
            single = (size_t)strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--sqlite-cache-mb") == 0 && i + 1 < argc)
            cache_mb = atoi(argv[++i]);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--keep") == 0)
            keep = 1;
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            rng = strtoull(argv[++i], NULL, 0);
        else
            bench_die("usage: bench_causal [--nodes N] [--edges M] [--queries Q] [--sqlite-queries Q] "
                "[--delta-queries Q] [--batch B] [--single S] [--sqlite-cache-mb MB] [--dir DIR] [--seed S] [--keep]");
    }
    seed = rng;
    if (nsq > nq)
        nsq = nq;
    if (ndq > nq)
        ndq = nq;
    if (single > n_nodes)
        single = n_nodes;
    if (n_nodes < 16 || n_nodes > UINT32_MAX / 2 || n_edges > UINT32_MAX ||
        n_edges / n_nodes + 2 > n_nodes / 2 || nq == 0 || batch == 0 || single < 2)
        bench_die("sizes out of range: --nodes >= 16, --edges / --nodes < --nodes / 2, "
            "--queries >= 1, --batch >= 1, --single >= 2");
    mkdir(dir, 0755);
    fprintf(stderr, "bench_causal: %zu nodes, %zu edges, %zu queries (SQLite %zu), batch %zu, "
            "single %zu, seed 0x%" PRIx64 ", dir %s\n", n_nodes, n_edges, nq, nsq, batch, single,
            rng, dir);

    t0 = bench_now();
    make_graph();
    stamp = xmalloc(n_nodes * sizeof *stamp);
    memset(stamp, 0, n_nodes * sizeof *stamp);
    bq = xmalloc(n_nodes * sizeof *bq);
    qs = make_queries(nq);
    gen_s = bench_now() - t0;
    memset(hist, 0, sizeof hist);
    for (size_t i = 0; i < nq; i++) {
        hist[qs[i].truth < 0 ? MAX_DEPTH + 1 : qs[i].truth]++;
        truth_found += qs[i].truth >= 0;
    }
    fprintf(stderr, "  graph and queries made in %.2f s; shortest paths (truth):", gen_s);
    for (int d = 0; d <= MAX_DEPTH; d++)
        fprintf(stderr, " %d:%zu", d, hist[d]);
    fprintf(stderr, " none:%zu\n", hist[MAX_DEPTH + 1]);

    memset(&cr, 0, sizeof cr);
    memset(&sr, 0, sizeof sr);
    cairn_side(dir, batch, qs, nq, ndq, single, &cr);
    sqlite_side(dir, batch, qs, nsq, single, cache_mb, &sr);

    /* agreement, query by query */
    for (size_t i = 0; i < nq; i++) {
        int c_ok = qs[i].c_depth == qs[i].truth && (i >= ndq || qs[i].d_depth == qs[i].truth),
            s_ok = i >= nsq || qs[i].s_depth == qs[i].truth;
        c_found += qs[i].c_found;
        if (i < nsq) {
            s_found += qs[i].s_found;
            c_found_s += qs[i].c_found;
        }
        if (!c_ok || !s_ok) {
            if (mism < 50)
                fprintf(stderr, "bench_causal: MISMATCH query %zu %s -> %s (walk %d): truth %d, "
                        "cairn %s %d (before the checkpoint %d), sqlite %s %d\n", i,
                        label(qs[i].from), label(qs[i].to), qs[i].walk, qs[i].truth,
                        qs[i].c_found ? "found" : "not found", qs[i].c_depth,
                        i < ndq ? qs[i].d_depth : -2,
                        i >= nsq ? "-" : qs[i].s_found ? "found" : "not found",
                        i >= nsq ? 0 : qs[i].s_depth);
            mism++;
        }
    }

    /* median and p99 per pass; for the ratio, cairn over the same first
     * nsq queries SQLite ran */
    for (int pass = 0; pass < 2; pass++) {
        double *tmp = xmalloc(nq * sizeof *tmp);
        memcpy(tmp, cr.qt[pass], nsq * sizeof *tmp);
        qsort(tmp, nsq, sizeof *tmp, cmp_double);
        cmed_s[pass] = pct(tmp, nsq, 50);
        cp99_s[pass] = pct(tmp, nsq, 99);
        free(tmp);
        qsort(cr.qt[pass], nq, sizeof *cr.qt[pass], cmp_double);
        qsort(sr.qt[pass], nsq, sizeof *sr.qt[pass], cmp_double);
        cmed[pass] = pct(cr.qt[pass], nq, 50);
        cp99[pass] = pct(cr.qt[pass], nq, 99);
        smed[pass] = pct(sr.qt[pass], nsq, 50);
        sp99[pass] = pct(sr.qt[pass], nsq, 99);
    }
    qsort(cr.rt, nq, sizeof *cr.rt, cmp_double);
    qsort(cr.dt, ndq, sizeof *cr.dt, cmp_double);
    if (ndq) {
        dmed = pct(cr.dt, ndq, 50);
        dp99 = pct(cr.dt, ndq, 99);
    }
    rmed = pct(cr.rt, nq, 50);
    rp99 = pct(cr.rt, nq, 99);

    double c_nodes = n_nodes / cr.nodes_s, c_edges = n_edges / cr.edges_s,
           s_nodes = n_nodes / sr.nodes_s, s_edges = n_edges / sr.edges_s,
           c_all = (n_nodes + n_edges) / (cr.nodes_s + cr.edges_s),
           s_all = (n_nodes + n_edges) / (sr.nodes_s + sr.edges_s),
           c1n = single / cr.single_nodes_s, c1e = single / cr.single_edges_s,
           s1n = single / sr.single_nodes_s, s1e = single / sr.single_edges_s;

    printf("{\"bench\":\"causal\",\"nodes\":%zu,\"edges\":%zu,\"seed\":%" PRIu64 ",\"batch\":%zu,"
           "\"queries\":%zu,\"sqlite_queries\":%zu,\"sqlite_cache_mb\":%d",
           n_nodes, n_edges, seed, batch, nq, nsq, cache_mb);
    for (int pass = 0; pass < 2; pass++)
        printf(",\"pass%d\":{\"cairn_path_median_us\":%.2f,\"cairn_path_p99_us\":%.2f,"
               "\"cairn_path_median_us_same_queries\":%.2f,\"cairn_path_p99_us_same_queries\":%.2f,"
               "\"sqlite_path_median_us\":%.2f,\"sqlite_path_p99_us\":%.2f,\"path_speedup\":%.2f}",
               pass + 1, cmed[pass] * 1e6, cp99[pass] * 1e6, cmed_s[pass] * 1e6,
               cp99_s[pass] * 1e6, smed[pass] * 1e6, sp99[pass] * 1e6, smed[pass] / cmed_s[pass]);
    printf(",\"delta_queries\":%zu,\"cairn_delta_path_median_us\":%.2f,"
           "\"cairn_delta_path_p99_us\":%.2f", ndq, dmed * 1e6, dp99 * 1e6);
    printf(",\"cairn_lookup_only_median_us\":%.2f,\"cairn_lookup_only_p99_us\":%.2f,"
           "\"truth_found\":%zu,\"cairn_found\":%zu,\"sqlite_found\":%zu,\"mismatches\":%zu,"
           "\"bad_paths\":%zu,"
           "\"cairn_nodes_per_s\":%.0f,\"cairn_node_ids_per_s\":%.0f,\"cairn_edges_per_s\":%.0f,"
           "\"sqlite_nodes_per_s\":%.0f,\"sqlite_edges_per_s\":%.0f,"
           "\"cairn_single_nodes_per_s\":%.0f,\"cairn_single_edges_per_s\":%.0f,"
           "\"sqlite_single_nodes_per_s\":%.0f,\"sqlite_single_edges_per_s\":%.0f,\"single\":%zu,"
           "\"cairn_checkpoint_s\":%.3f,\"cairn_graph_file_bytes\":%" PRIu64 ","
           "\"cairn_store_bytes\":%" PRIu64 ",\"cairn_close_s\":%.3f,\"cairn_open_ms\":%.2f,"
           "\"cairn_reflex_open_ms\":%.2f,\"cairn_first_query_us\":%.1f,"
           "\"cairn_session_close_ms\":%.2f,\"cairn_session_file\":\"%s\","
           "\"cairn_session_file_bytes\":%" PRIu64 ",\"cairn_session_open_ms\":%.2f,"
           "\"sqlite_db_bytes\":%" PRIu64 "}\n",
           rmed * 1e6, rp99 * 1e6, truth_found, c_found, s_found, mism, cr.bad_paths, c_nodes,
           n_nodes / cr.ids_s, c_edges, s_nodes, s_edges, c1n, c1e, s1n, s1e, single, cr.ckpt_s,
           cr.graph_bytes, cr.store_bytes, cr.close_s, cr.db_open_s * 1e3, cr.rx_open_s * 1e3,
           cr.first_query_s * 1e6, cr.gen_close_s * 1e3, cr.gen_file, cr.gen_bytes,
           cr.gen_open_s * 1e3, sr.db_bytes);
    fflush(stdout);

    fprintf(stderr, "causal graph, %zu nodes, %zu edges (out-degree %.1f), depth <= %d:\n",
            n_nodes, n_edges, (double)n_edges / n_nodes, MAX_DEPTH);
    fprintf(stderr, "  found: truth %zu/%zu, cairn %zu/%zu, sqlite %zu/%zu (cairn on those %zu: %zu)\n",
            truth_found, nq, c_found, nq, s_found, nsq, nsq, c_found_s);
    for (int pass = 0; pass < 2; pass++) {
        fprintf(stderr, "  path, pass %d (%s):\n", pass + 1,
                pass ? "the same queries again" : "right after the open");
        fprintf(stderr, "    cairn  %4zu queries: median %8.1f us  p99 %8.1f us\n", nq,
                cmed[pass] * 1e6, cp99[pass] * 1e6);
        if (nsq != nq)
            fprintf(stderr, "    cairn  %4zu queries: median %8.1f us  p99 %8.1f us (the ones sqlite ran)\n",
                    nsq, cmed_s[pass] * 1e6, cp99_s[pass] * 1e6);
        fprintf(stderr, "    sqlite %4zu queries: median %8.1f us  p99 %8.1f us\n", nsq,
                smed[pass] * 1e6, sp99[pass] * 1e6);
        fprintf(stderr, "    median <= 50 us: %s;  >= 100x faster than sqlite (%.1fx): %s\n",
                verdict(cmed[pass] <= 50e-6), smed[pass] / cmed_s[pass],
                verdict(smed[pass] / cmed_s[pass] >= 100));
    }
    fprintf(stderr, "  cairn label lookups alone (path_find from = to): median %.1f us  p99 %.1f us\n",
            rmed * 1e6, rp99 * 1e6);
    fprintf(stderr, "  cairn before the checkpoint (RAM delta, no graph file), first %zu queries: "
            "median %.1f us  p99 %.1f us\n", ndq, dmed * 1e6, dp99 * 1e6);
    fprintf(stderr, "  agreement (found and depth, both engines and the truth, every query): "
            "%zu mismatches, %zu bad cairn paths: %s\n", mism, cr.bad_paths,
            verdict(mism == 0 && cr.bad_paths == 0));
    fprintf(stderr, "  add, batches of %zu: cairn nodes %.0f/s  edges %.0f/s  (all %.0f/s)   "
            "sqlite nodes %.0f/s  edges %.0f/s  (all %.0f/s)   ratio nodes %.2fx edges %.2fx\n",
            batch, c_nodes, c_edges, c_all, s_nodes, s_edges, s_all, c_nodes / s_nodes,
            c_edges / s_edges);
    fprintf(stderr, "       cairn_causal_node_id for every label: %.0f/s (%.2f s, not in the rates)\n",
            n_nodes / cr.ids_s, cr.ids_s);
    fprintf(stderr, "       >= 500,000/s: nodes %s, edges %s\n", verdict(c_nodes >= 5e5),
            verdict(c_edges >= 5e5));
    fprintf(stderr, "  add, single calls (%zu each): cairn nodes %.0f/s  edges %.0f/s   sqlite (a "
            "transaction per row) nodes %.0f/s  edges %.0f/s   ratio nodes %.2fx edges %.2fx\n",
            single, c1n, c1e, s1n, s1e, c1n / s1n, c1e / s1e);
    fprintf(stderr, "       >= 500,000/s: nodes %s, edges %s\n", verdict(c1n >= 5e5),
            verdict(c1e >= 5e5));
    fprintf(stderr, "  cairn checkpoint %.2f s, graph file %s %.1f MB; store %.1f MB; close %.2f s; "
            "reopen: cairn_open %.1f ms + cairn_reflex_open %.1f ms; first query %.1f us\n",
            cr.ckpt_s, cr.graph_file, cr.graph_bytes / 1e6, cr.store_bytes / 1e6, cr.close_s,
            cr.db_open_s * 1e3, cr.rx_open_s * 1e3, cr.first_query_s * 1e6);
    fprintf(stderr, "  a session after the graph file (10,000 graph records): close %.1f ms, "
            "writes %s (%.2f MB); open with it %.1f ms (%.0fx the whole checkpoint's time for "
            "the close)\n", cr.gen_close_s * 1e3, cr.gen_file, cr.gen_bytes / 1e6,
            cr.gen_open_s * 1e3, cr.ckpt_s / cr.gen_close_s);
    fprintf(stderr, "  sqlite db %.1f MB (page cache %d MB)\n", sr.db_bytes / 1e6, cache_mb);
    if (mism != 0 || cr.bad_paths != 0) {
        fprintf(stderr, "bench_causal: FAILED: %zu mismatches, %zu bad paths (see above)\n", mism,
                cr.bad_paths);
        return 1;
    }
    for (int pass = 0; pass < 2; pass++) {
        free(cr.qt[pass]);
        free(sr.qt[pass]);
    }
    free(cr.rt);
    free(cr.dt);
    free(qs);
    return 0;
}
