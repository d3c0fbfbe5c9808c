/*
 * causal.c - the causal graph's calls: add node / edge / batch, get, and
 * path, a bidirectional breadth-first search over the graph file's CSR
 * arrays and the RAM delta's lists.
 *
 * Why bidirectional: a path of depth d through nodes of out-degree k costs
 * a one-sided BFS about k^d visits, two half searches about 2 k^(d/2).
 * Each step expands the smaller frontier one whole level; every node is
 * checked against the other side when it is first reached, so the first
 * level that meets gives the shortest length, and the best meeting in that
 * level (fewest edges, then the first met) is the path returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfs.h"
#include "rstate.h"
#include "utf8.h"

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void cairn_causal_node_clear(cairn_causal_node *n)
{
    if (n == NULL)
        return;
    free(n->label);
    free_strv(n->episodes, n->n_episodes);
    memset(n, 0, sizeof *n);
}

void cairn_causal_edge_clear(cairn_causal_edge *e)
{
    if (e == NULL)
        return;
    free_strv(e->episodes, e->n_episodes);
    memset(e, 0, sizeof *e);
}

void cairn_causal_path_clear(cairn_causal_path *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n; i++)
        cairn_causal_node_clear(&p->path[i]);
    free(p->path);
    memset(p, 0, sizeof *p);
}

static char **copy_eps(const cairn_reflex *r, const uint32_t *eps, uint32_t n)
{
    char **v = calloc(n ? n : 1, sizeof *v);
    for (uint32_t i = 0; v != NULL && i < n; i++) {
        size_t len = r->name_len[eps[i]];
        if ((v[i] = malloc(len + 1)) == NULL) {
            free_strv(v, i);
            return NULL;
        }
        memcpy(v[i], r->names[eps[i]], len + 1);
    }
    return v;
}

int cairn__rx_copy_node(const cairn_reflex *r, uint32_t i, cairn_causal_node *o)
{
    gi_node n;
    cairn__rx_node(r, i, &n);
    memset(o, 0, sizeof *o);
    cairn__rx_id('n', n.key, o->id);
    o->type = n.type;
    o->frequency = n.frequency;
    o->success_rate = n.success;
    o->created_ms = n.created;
    o->label = malloc(n.label_len + 1u);
    o->episodes = copy_eps(r, n.eps, n.n_eps);
    if (o->label == NULL || o->episodes == NULL) {
        free(o->label);
        free(o->episodes);
        memset(o, 0, sizeof *o);
        return CAIRN_ENOMEM;
    }
    memcpy(o->label, n.label, n.label_len);
    o->label[n.label_len] = 0;
    o->n_episodes = n.n_eps;
    return CAIRN_OK;
}

int cairn__rx_copy_edge(const cairn_reflex *r, uint32_t i, cairn_causal_edge *o)
{
    gi_edge d;
    gi_node s, t;
    cairn__rx_edge(r, i, &d);
    cairn__rx_node(r, d.src, &s);
    cairn__rx_node(r, d.dst, &t);
    memset(o, 0, sizeof *o);
    cairn__rx_id('n', s.key, o->source);
    cairn__rx_id('n', t.key, o->target);
    o->type = d.type;
    o->weight = d.weight;
    o->evidence_count = d.evidence;
    o->created_ms = d.created;
    if ((o->episodes = copy_eps(r, d.eps, d.n_eps)) == NULL)
        return CAIRN_ENOMEM;
    o->n_episodes = d.n_eps;
    return CAIRN_OK;
}

/* ---- adding ---- */

/* A label, an episode id: required or not, at most CAIRN_LABEL_MAX bytes,
 * and text by the one rule (utf8.h; a label is folded once when applied,
 * and the fold takes what the rule takes). */
static int check_text(cairn_reflex *r, const char *what, const char *s, int required)
{
    cairn__err e;
    if (s == NULL || s[0] == 0)
        return required ? cairn__rx_fail(r, CAIRN_EINVAL, "%s: required", what) : CAIRN_OK;
    if (strlen(s) > CAIRN_LABEL_MAX)
        return cairn__rx_fail(r, CAIRN_EINVAL, "%s: longer than %d bytes", what, CAIRN_LABEL_MAX);
    if (cairn__utf8_check_str(&e, what, s) != CAIRN_OK)
        return cairn__rx_fail(r, CAIRN_EINVAL, "%s", e.msg);
    return CAIRN_OK;
}

/* Check op i of a batch against the state and the ops before it (whose
 * nodes' keys are in keys[0..i)). */
static int check_op(cairn_reflex *r, const cairn_causal_op *op, size_t i, uint64_t *keys,
                    const cairn_causal_op *ops)
{
    char what[48];
    if (!op->is_edge) {
        snprintf(what, sizeof what, "op %zu: label", i);
        if (op->type >= CAIRN_NODE_TYPES)
            return cairn__rx_fail(r, CAIRN_EINVAL, "op %zu: type must be one of decision, event, "
                                  "outcome, pattern, error, tool_call, commit, milestone, test, "
                                  "handoff", i);
        int rc = check_text(r, what, op->label, 1);
        if (rc != CAIRN_OK)
            return rc;
        (void)cairn__rx_find_label(r, op->label, strlen(op->label), &keys[i]);
        snprintf(what, sizeof what, "op %zu: episode", i);
        return check_text(r, what, op->episode, 0);
    }
    uint64_t s, d;
    if (op->type >= CAIRN_EDGE_TYPES)
        return cairn__rx_fail(r, CAIRN_EINVAL, "op %zu: type must be one of causes, enables, "
                              "prevents, correlates", i);
    if (!(op->weight >= 0 && op->weight <= 1))
        return cairn__rx_fail(r, CAIRN_EINVAL, "op %zu: weight must be between 0 and 1", i);
    if (!cairn__rx_parse_id(op->source, 'n', &s) || !cairn__rx_parse_id(op->target, 'n', &d))
        return cairn__rx_fail(r, CAIRN_EINVAL, "op %zu: source and target must be node ids "
                              "(\"n\" and 16 hex digits)", i);
    for (int side = 0; side < 2; side++) {
        uint64_t k = side ? d : s;
        int found = cairn__rx_find_key(r, k) != R_NONE;
        for (size_t j = 0; !found && j < i; j++)
            found = !ops[j].is_edge && keys[j] == k;
        if (!found)
            return cairn__rx_fail(r, CAIRN_ENOTFOUND, "op %zu: no node %s", i,
                                  side ? op->target : op->source);
    }
    keys[i] = 0;
    snprintf(what, sizeof what, "op %zu: episode", i);
    return check_text(r, what, op->episode, 0);
}

static void op_change(const cairn_causal_op *op, rchange *c)
{
    memset(c, 0, sizeof *c);
    c->type = op->type;
    c->episode = op->episode;
    c->ep_len = op->episode ? strlen(op->episode) : 0;
    if (!op->is_edge) {
        c->rec = CAIRN_REC_CAUSAL_NODE;
        c->label = op->label;
        c->len = strlen(op->label);
    } else {
        c->rec = CAIRN_REC_CAUSAL_EDGE;
        (void)cairn__rx_parse_id(op->source, 'n', &c->src);
        (void)cairn__rx_parse_id(op->target, 'n', &c->dst);
        c->weight = op->weight;
    }
}

int cairn_causal_add_batch(cairn_reflex *r, const cairn_causal_op *ops, size_t n)
{
    uint64_t *keys;
    rchange *c;
    int rc = CAIRN_OK;

    if (n == 0)
        return CAIRN_OK;
    keys = malloc(n * sizeof *keys);
    c = malloc(n * sizeof *c);
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    if (keys == NULL || c == NULL)
        rc = cairn__rx_fail(r, CAIRN_ENOMEM, "no memory");
    if (rc == CAIRN_OK && (rc = cairn__rx_turn_begin(r)) == CAIRN_OK) {
        for (size_t i = 0; i < n && rc == CAIRN_OK; i++) {
            rc = check_op(r, &ops[i], i, keys, ops);
            op_change(&ops[i], &c[i]);
        }
        if (rc == CAIRN_OK)
            rc = cairn__rx_commit(r, c, n);
        rc = cairn__rx_turn_end(r, rc);
    }
    pthread_mutex_unlock(&r->mu);
    free(keys);
    free(c);
    return rc;
}

/* One change of a single call (mu held): check it, commit it into *c.
 * Its messages name the field, not "op 0". */
static int add_one(cairn_reflex *r, const cairn_causal_op *op, uint64_t *key, rchange *c)
{
    int rc;
    cairn__errbuf(r)[0] = 0;
    rc = cairn__rx_turn_begin(r);
    if (rc != CAIRN_OK)
        return rc;
    rc = check_op(r, op, 0, key, op);
    if (rc == CAIRN_OK) {
        op_change(op, c);
        return cairn__rx_turn_end(r, cairn__rx_commit(r, c, 1));
    }
    rc = cairn__rx_turn_end(r, rc);
    if (strncmp(cairn__errbuf(r), "op 0: ", 6) == 0)
        memmove(cairn__errbuf(r), cairn__errbuf(r) + 6, strlen(cairn__errbuf(r) + 6) + 1);
    return rc;
}

int cairn_causal_add_node(cairn_reflex *r, unsigned type, const char *label, const char *episode,
                          cairn_causal_node *out)
{
    cairn_causal_op op;
    uint64_t key;
    rchange c;
    int rc;

    memset(&op, 0, sizeof op);
    op.type = type;
    op.label = label;
    op.episode = episode;
    pthread_mutex_lock(&r->mu);
    rc = add_one(r, &op, &key, &c);
    if (rc == CAIRN_OK && out != NULL) {
        uint32_t i = cairn__rx_find_key(r, key);
        rc = i == R_NONE ? cairn__rx_fail(r, CAIRN_ENOTFOUND, "the node was not folded")
                         : cairn__rx_copy_node(r, i, out);
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

int cairn_causal_add_edge(cairn_reflex *r, const char *source_id, const char *target_id,
                          unsigned type, double weight, const char *episode,
                          cairn_causal_edge *out)
{
    cairn_causal_op op;
    uint64_t key;
    rchange c;
    int rc;

    memset(&op, 0, sizeof op);
    op.is_edge = 1;
    op.type = type;
    op.source = source_id;
    op.target = target_id;
    op.weight = weight;
    op.episode = episode;
    pthread_mutex_lock(&r->mu);
    rc = add_one(r, &op, &key, &c);
    if (rc == CAIRN_OK && out != NULL) {
        uint32_t s = cairn__rx_find_key(r, c.src), d = cairn__rx_find_key(r, c.dst);
        uint32_t i = cairn__rx_find_edge(r, s, d, type);
        rc = i == R_NONE ? cairn__rx_fail(r, CAIRN_ENOTFOUND, "the edge was not folded")
                         : cairn__rx_copy_edge(r, i, out);
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

int cairn_causal_node_id(cairn_reflex *r, const char *label, char *id)
{
    uint64_t key;
    if (label == NULL || label[0] == 0)
        return CAIRN_EINVAL;
    pthread_mutex_lock(&r->mu);
    (void)cairn__rx_catch_up(r);
    (void)cairn__rx_find_label(r, label, strlen(label), &key);
    pthread_mutex_unlock(&r->mu);
    cairn__rx_id('n', key, id);
    return CAIRN_OK;
}

int cairn_causal_get_node(cairn_reflex *r, const char *id, cairn_causal_node *out)
{
    uint64_t key;
    uint32_t i;
    int rc;
    memset(out, 0, sizeof *out);
    if (!cairn__rx_parse_id(id, 'n', &key))
        return CAIRN_ENOTFOUND;
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    rc = cairn__rx_catch_up(r);
    i = rc == CAIRN_OK ? cairn__rx_find_key(r, key) : R_NONE;
    if (rc == CAIRN_OK)
        rc = i == R_NONE ? cairn__rx_fail(r, CAIRN_ENOTFOUND, "no node %s", id)
                         : cairn__rx_copy_node(r, i, out);
    pthread_mutex_unlock(&r->mu);
    return rc;
}

/* ---- path ---- */

/* The first node, in node order, whose folded label holds q: the file's
 * index, then the delta's (a scan while the delta is small, or when its
 * index cannot get the memory to catch up). */
static uint32_t find_sub(cairn_reflex *r, const char *q, size_t len)
{
    uint32_t v = r->gi.map != NULL ? cairn__gi_find_label(&r->gi, q, len) : R_NONE;
    if (v != R_NONE)
        return v;
    if (len >= 3 && r->n_dn >= DL_MIN && cairn__dl_sync(&r->dl, r->dn, r->n_dn) == CAIRN_OK) {
        v = cairn__dl_find(&r->dl, r->dn, q, len);
        return v == UINT32_MAX ? R_NONE : r->base_n + v;
    }
    for (size_t i = 0; i < r->n_dn; i++)
        if (cairn__gi_contains(r->dn[i].fold, r->dn[i].fold_len, q, len))
            return r->base_n + (uint32_t)i;
    return R_NONE;
}

int cairn_causal_path_find(cairn_reflex *r, const char *from_label, const char *to_label,
                           unsigned max_depth, cairn_causal_path *out)
{
    char *qf = NULL, *qt = NULL;
    size_t lf = 0, lt = 0, n = 0;
    uint32_t a, b, *p = NULL;
    int rc;

    memset(out, 0, sizeof *out);
    if (max_depth == 0)
        max_depth = 5;
    if (max_depth > 10)
        return cairn__rx_fail(r, CAIRN_EINVAL, "max depth must be between 1 and 10");
    if (from_label == NULL || from_label[0] == 0 || to_label == NULL || to_label[0] == 0)
        return cairn__rx_fail(r, CAIRN_EINVAL, "from and to labels are required");
    rc = cairn__rx_fold(from_label, strlen(from_label), &qf, &lf);
    if (rc == CAIRN_OK)
        rc = cairn__rx_fold(to_label, strlen(to_label), &qt, &lt);
    if (rc != CAIRN_OK) {
        free(qf);
        return cairn__rx_fail(r, rc, "%s", rc == CAIRN_ENOMEM ? "no memory" : "a label is not UTF-8");
    }
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    rc = cairn__rx_catch_up(r);
    a = rc == CAIRN_OK ? find_sub(r, qf, lf) : R_NONE;
    b = rc == CAIRN_OK ? find_sub(r, qt, lt) : R_NONE;
    if (rc == CAIRN_OK && (a == R_NONE || b == R_NONE)) {
        strcpy(out->error, "Node not found");
    } else if (rc == CAIRN_OK) {
        rc = cairn__bfs_path(r, a, b, max_depth, &p, &n);
        if (rc == CAIRN_OK && p == NULL)
            snprintf(out->error, sizeof out->error, "No path found within depth %u", max_depth);
    }
    if (rc == CAIRN_OK && p != NULL) {
        out->path = calloc(n, sizeof *out->path);
        if (out->path == NULL)
            rc = CAIRN_ENOMEM;
        for (size_t i = 0; i < n && rc == CAIRN_OK; i++) {
            rc = cairn__rx_copy_node(r, p[i], &out->path[i]);
            if (rc == CAIRN_OK)
                out->n = i + 1;
        }
        out->found = rc == CAIRN_OK;
        out->depth = (unsigned)(n - 1);
    }
    if (rc == CAIRN_ENOMEM)
        (void)cairn__rx_fail(r, rc, "no memory for the path");
    pthread_mutex_unlock(&r->mu);
    free(p);
    free(qf);
    free(qt);
    if (rc != CAIRN_OK)
        cairn_causal_path_clear(out);
    return rc;
}
