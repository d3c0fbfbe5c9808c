/*
 * rcheckpoint.c - the reflexion handle's life: open (map the newest graph
 * file, load its small tables, fold the records after it), checkpoint
 * (write a graph file of the whole state, then read it back in place of
 * the RAM delta), close, status and verify.
 *
 * The whole-file merge in the background (format-spec/graph.md, "The
 * merger") runs on the background worker the memory layer's merger uses
 * too (engine/log/bgwork.h: the thread, its half-second delay, its stop
 * and join); what is the reflexion's is here: when to start one (at open,
 * when the generations are due), and its one step (merge_files).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bfs.h"
#include "bgwork.h"
#include "io.h"
#include "rstate.h"
#include "seqfile.h"
#include "store.h"

void cairn__rx_free_state(cairn_reflex *r)
{
    for (uint32_t i = 0; r->bn != NULL && i < r->base_n; i++) {
        free(r->bn[i].eps);
        if (r->bn[i].owns) {
            free(r->bn[i].label);
            free(r->bn[i].fold);
        }
    }
    for (uint32_t i = 0; r->be != NULL && i < r->base_m; i++)
        free(r->be[i].eps);
    for (size_t i = 0; i < r->n_dn; i++) {
        free(r->dn[i].label);
        free(r->dn[i].fold);
        free(r->dn[i].eps);
    }
    for (size_t i = 0; i < r->n_de; i++)
        free(r->de[i].eps);
    for (size_t i = 0; i < r->n_names; i++)
        free(r->names[i]);
    for (size_t i = 0; i < r->n_pat; i++) {
        free(r->pat[i].name);
        free(r->pat[i].desc);
        free(r->pat[i].trigger);
        free(r->pat[i].action);
        free(r->pat[i].eps);
    }
    free(r->bn);
    free(r->be);
    free(r->dn);
    free(r->de);
    free(r->ntab);
    free(r->etab);
    free(r->dout);
    free(r->din);
    free(r->names);
    free(r->name_len);
    free(r->name_tab);
    free(r->epi);
    free(r->epi_by_name);
    free(r->pat);
    free(r->tnodes);
    free(r->tedges);
    cairn__bfs_free(r->bfs);
    cairn__dl_free(&r->dl);
    cairn__gi_close(&r->gi);
    /* Everything after the handle's db and mutex. */
    memset((char *)r + offsetof(cairn_reflex, gi), 0, sizeof *r - offsetof(cairn_reflex, gi));
}

/* The file's names, episodes and patterns into RAM (they are few); nodes
 * and edges stay in the mapping. */
int cairn__rx_load_tables(cairn_reflex *r)
{
    const gimage *g = &r->gi;
    r->base_n = (uint32_t)g->n_nodes;
    r->base_m = (uint32_t)g->n_edges;
    r->bn = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *r->bn);
    r->be = calloc(g->n_edges ? g->n_edges : 1, sizeof *r->be);
    if (r->bn == NULL || r->be == NULL)
        return CAIRN_ENOMEM;
    for (uint64_t i = 0; i < g->n_names; i++) {
        gi_str s = cairn__gi_name(g, (uint32_t)i);
        if (cairn__rx_name(r, s.p, s.len, 1) != i)
            return CAIRN_ECORRUPT; /* a name twice, or no memory */
    }
    for (uint64_t i = 0; i < g->n_episodes; i++) {
        gi_episode e;
        cairn__gi_episode(g, (uint32_t)i, &e);
        if (r->epi_by_name[e.name] != 0)
            return CAIRN_ECORRUPT;
        if (cairn__grow(NULL, (void **)&r->epi, &r->cap_epi, r->n_epi + 1, sizeof *r->epi) != 0)
            return CAIRN_ENOMEM;
        r->epi[r->n_epi].name = e.name;
        r->epi[r->n_epi].outcome = e.outcome;
        r->epi[r->n_epi].processed = e.processed;
        r->epi[r->n_epi].seq = e.seq;
        r->epi[r->n_epi].ts = e.ts;
        r->epi[r->n_epi].gen = 0; /* as in the whole file */
        r->epi_by_name[e.name] = (uint32_t)++r->n_epi;
    }
    for (uint64_t i = 0; i < g->n_patterns; i++) {
        gi_pattern p;
        rpat *x;
        cairn__gi_pattern(g, (uint32_t)i, &p);
        if (cairn__grow(NULL, (void **)&r->pat, &r->cap_pat, r->n_pat + 1, sizeof *r->pat) != 0)
            return CAIRN_ENOMEM;
        x = &r->pat[r->n_pat++];
        memset(x, 0, sizeof *x);
        x->key = p.key;
        x->name = cairn__rx_dup(p.name.p, p.name.len);
        x->desc = cairn__rx_dup(p.desc.p, p.desc.len);
        x->trigger = cairn__rx_dup(p.trigger.p, p.trigger.len);
        x->action = cairn__rx_dup(p.action.p, p.action.len);
        x->eps = malloc((p.n_eps ? p.n_eps : 1) * sizeof *x->eps);
        if (x->name == NULL || x->desc == NULL || x->trigger == NULL || x->action == NULL ||
            x->eps == NULL)
            return CAIRN_ENOMEM;
        memcpy(x->eps, p.eps, (size_t)p.n_eps * sizeof *x->eps);
        x->n_eps = x->cap_eps = p.n_eps;
        x->success = p.success;
        x->occurrences = p.occurrences;
        x->last_used = p.last_used;
        x->created = p.created;
    }
    r->folded = g->covered;
    r->skipped = g->skipped;
    r->updated = g->updated;
    return CAIRN_OK;
}

/* Take the newest usable chain of graph files: generations on the whole
 * file they lie on, else the newest whole file alone; or note why none
 * is used. */
static int open_file(cairn_reflex *r, uint64_t last_seq)
{
    cairn__err e;
    int rc = cairn__rg_open_chain(r, last_seq);
    if (rc != CAIRN_ENOTFOUND)
        return rc;
    rc = cairn__gi_open(&r->gi, r->db->io, r->db->dirfd, last_seq, &e);
    cairn__rg_chain_reset(r);
    if (rc == CAIRN_ENOTFOUND)
        return CAIRN_OK;
    /* Only a file folded from this store's log as it is now. */
    if (rc == CAIRN_OK &&
        (rc = cairn__logbind_check(r->db, r->gi.name, r->gi.covered, &r->gi.bind, &e)) != CAIRN_OK)
        cairn__gi_close_keep_name(&r->gi);
    if (rc == CAIRN_OK) {
        rc = cairn__rx_load_tables(r);
        if (rc == CAIRN_OK) {
            cairn__rg_chain_reset(r);
            return CAIRN_OK;
        }
        if (rc == CAIRN_ENOMEM)
            return cairn__rx_fail(r, rc, "no memory for %s", r->gi.name);
        snprintf(e.msg, sizeof e.msg, "%s: an episode or name is listed twice", r->gi.name);
    }
    snprintf(r->note, sizeof r->note, "%.200s; rebuilt from the log", e.msg);
    /* Damaged, or an older version: a writer removes it, so the next open
     * does not trip on it. A newer version's file is left alone here (this
     * build folds the log instead); this build's next checkpoint replaces
     * it, as it replaces any older graph file. */
    if (r->gi.name[0] != 0 && !r->db->read_only &&
        (rc == CAIRN_ECORRUPT || rc == CAIRN_ECHECKSUM ||
         (rc == CAIRN_EVERSION && r->gi.version < GI_VERSION)))
        cairn__seqfile_set_aside(r->db, &cairn__seqfile_graph, r->gi.name, &r->gi.id);
    cairn__rx_free_state(r);
    cairn__rg_chain_reset(r);
    return CAIRN_OK;
}

static void merger_start(cairn_reflex *r);

int cairn_reflex_open(cairn_db *db, cairn_reflex **out)
{
    cairn_stats st;
    cairn_reflex *r;
    int rc;

    *out = NULL;
    if (db == NULL)
        return CAIRN_EINVAL;
    if ((r = calloc(1, sizeof *r)) == NULL)
        return CAIRN_ENOMEM;
    r->db = db;
    r->fold_labels = cairn__label_rule(db) == MAN_LABELS_FOLDED;
    r->bg_merge = !db->read_only && db->background;
    cairn__errbuf_drop(r); /* a handle that lived here before */
    pthread_mutex_init(&r->mu, NULL);
    rc = cairn_stats_get(db, &st);
    if (rc == CAIRN_OK)
        rc = open_file(r, cairn__handed_seq(db));
    if (rc == CAIRN_OK)
        rc = cairn__rx_catch_up(r);
    if (rc != CAIRN_OK) {
        /* the handle goes: its detail stays readable as the store's */
        if (cairn__errbuf(r)[0] != 0)
            snprintf(cairn__errbuf(db), CAIRN_ERRMSG_MAX, "%s", cairn__errbuf(r));
        cairn__errbuf_drop(r);
        cairn__rx_free_state(r);
        pthread_mutex_destroy(&r->mu);
        free(r);
        return rc;
    }
    merger_start(r);
    *out = r;
    return CAIRN_OK;
}

/* ---- checkpoint ---- */

static int cmp_edge(const void *a, const void *b)
{
    const gi_edge *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    return x->type < y->type ? -1 : x->type > y->type;
}

static int checkpoint_turn(cairn_reflex *r, int closing);
static int reread(cairn_reflex *r);

/* At close: what changed since the newest graph file as a generation, or
 * the whole file when the policy says so (rgen.c). */
static int save_turn(cairn_reflex *r)
{
    size_t j;
    int rc;
    if (r->stale)
        return cairn__rx_fail(r, CAIRN_EINVAL, "this handle missed a record of the log: reopen "
                              "the store before writing the graph file");
    if ((rc = cairn__rx_catch_up(r)) != CAIRN_OK)
        return rc;
    /* A whole file newer than the one the state lies on (the merger's, or
     * another process's) holds the generations: read it, and write what
     * changed since it. */
    if (r->n_chain > 0 &&
        cairn__seqfile_newest(&cairn__seqfile_graph, r->db->io, r->db->dirfd) > r->chain[0].seq &&
        (rc = reread(r)) != CAIRN_OK)
        return rc;
    if (cairn__rg_policy(r, &j))
        return cairn__rg_write(r, j);
    return checkpoint_turn(r, 1);
}

/* The graph file is written in a turn: under the lock, and over the log
 * as it is. */
static int checkpoint_locked(cairn_reflex *r, int closing)
{
    int rc;
    if (r->db->read_only)
        return cairn__rx_fail(r, CAIRN_EPERM, "a read-only handle cannot write the graph file");
    if ((rc = cairn__rx_turn_begin(r)) != CAIRN_OK)
        return rc;
    return cairn__rx_turn_end(r, closing ? save_turn(r) : checkpoint_turn(r, 0));
}

/* The whole graph file of r's state, covering r->folded; the gate (if
 * any) runs just before the file is put in place; *stop (if given) set
 * gives the write up (CAIRN_ELOCKED). */
static int write_whole(cairn_reflex *r, int (*gate)(void *), void *gate_user, const int *stop)
{
    cairn__err e;
    gi_in in;
    gi_node *nodes = NULL;
    gi_edge *edges = NULL;
    gi_pattern *pats = NULL;
    gi_str *names = NULL;
    gi_episode *eps = NULL;
    uint32_t n = rx_nodes(r), m = rx_edges(r);
    int rc;

    nodes = malloc((n ? n : 1) * sizeof *nodes);
    edges = malloc((m ? m : 1) * sizeof *edges);
    pats = malloc((r->n_pat ? r->n_pat : 1) * sizeof *pats);
    names = malloc((r->n_names ? r->n_names : 1) * sizeof *names);
    eps = malloc((r->n_epi ? r->n_epi : 1) * sizeof *eps);
    if (nodes == NULL || edges == NULL || pats == NULL || names == NULL || eps == NULL) {
        rc = cairn__rx_fail(r, CAIRN_ENOMEM, "no memory for the graph file");
        goto out;
    }
    for (uint32_t i = 0; i < n; i++)
        cairn__rx_node(r, i, &nodes[i]);
    for (uint32_t i = 0, src = 0; i < m; i++)
        cairn__rx_edge_next(r, i, &src, &edges[i]);
    /* The file's edges are in (source, target, type) order: a function of
     * the edges alone, whatever order they were folded in. */
    qsort(edges, m, sizeof *edges, cmp_edge);
    for (size_t i = 0; i < r->n_pat; i++) {
        const rpat *p = &r->pat[i];
        pats[i].key = p->key;
        pats[i].name.p = p->name;
        pats[i].name.len = (uint32_t)strlen(p->name);
        pats[i].desc.p = p->desc;
        pats[i].desc.len = (uint32_t)strlen(p->desc);
        pats[i].trigger.p = p->trigger;
        pats[i].trigger.len = (uint32_t)strlen(p->trigger);
        pats[i].action.p = p->action;
        pats[i].action.len = (uint32_t)strlen(p->action);
        pats[i].success = p->success;
        pats[i].occurrences = p->occurrences;
        pats[i].last_used = p->last_used;
        pats[i].created = p->created;
        pats[i].eps = p->eps;
        pats[i].n_eps = p->n_eps;
    }
    for (size_t i = 0; i < r->n_names; i++) {
        names[i].p = r->names[i];
        names[i].len = r->name_len[i];
    }
    for (size_t i = 0; i < r->n_epi; i++) {
        eps[i].name = r->epi[i].name;
        eps[i].outcome = r->epi[i].outcome;
        eps[i].processed = r->epi[i].processed;
        eps[i].seq = r->epi[i].seq;
        eps[i].ts = r->epi[i].ts;
    }
    memset(&in, 0, sizeof in);
    in.covered = r->folded;
    rc = cairn__logbind_make(r->db, in.covered, &in.bind, &e);
    if (rc != CAIRN_OK) {
        rc = cairn__rx_fail(r, rc, "graph file: %s", e.msg);
        goto out;
    }
    in.skipped = r->skipped;
    in.updated = r->updated;
    in.nodes = nodes;
    in.n_nodes = n;
    in.edges = edges;
    in.n_edges = m;
    in.patterns = pats;
    in.n_patterns = r->n_pat;
    in.names = names;
    in.n_names = r->n_names;
    in.episodes = eps;
    in.n_episodes = r->n_epi;
    in.gate = gate;
    in.gate_user = gate_user;
    /* a merger writes outside the turn: a temp name of its own */
    in.temp_salt = gate != NULL ? cairn__random_salt() | 1 : 0;
    if (stop != NULL && __atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
        rc = CAIRN_ELOCKED; /* a merge given up before its longest step */
        goto out;
    }
    rc = cairn__gi_write(r->db->io, r->db->dirfd, &in, &e);
    if (rc == CAIRN_OK) {
        /* Listed in the MANIFEST in place of every other graph file and
         * every generation (it holds what each did), in one write. */
        cairn__seqfile_change c;
        uint64_t keep = in.covered;
        memset(&c, 0, sizeof c);
        c.k = &cairn__seqfile_graph;
        c.adding = 1;
        c.add = in.covered;
        c.keep = &keep;
        c.n_keep = 1;
        c.keep_only = 1;
        c.clear = &cairn__seqfile_graphgen;
        rc = cairn__seqfile_change_apply(r->db, &c, &e);
    }
    if (rc != CAIRN_OK)
        rc = cairn__rx_fail(r, rc, "%s", e.msg);
out:
    free(nodes);
    free(edges);
    free(pats);
    free(names);
    free(eps);
    return rc;
}

/* Read the graph files again in place of the RAM state, then the log
 * after them. */
static int reread(cairn_reflex *r)
{
    int rc;
    cairn__rx_free_state(r);
    rc = open_file(r, UINT64_MAX);
    if (rc == CAIRN_OK)
        rc = cairn__rx_catch_up(r);
    if (rc != CAIRN_OK)
        r->stale = 1;
    return rc;
}

static int checkpoint_turn(cairn_reflex *r, int closing)
{
    int rc;

    if (r->db->read_only)
        return cairn__rx_fail(r, CAIRN_EPERM, "a read-only handle cannot write the graph file");
    if (r->stale)
        return cairn__rx_fail(r, CAIRN_EINVAL, "this handle missed a record of the log: reopen "
                              "the store before writing the graph file");
    if ((rc = cairn_sync(r->db)) != CAIRN_OK)
        return cairn__rx_fail(r, rc, "%s", cairn_errmsg(r->db));
    if ((rc = cairn__rx_catch_up(r)) != CAIRN_OK)
        return rc;
    if ((rc = write_whole(r, NULL, NULL, NULL)) != CAIRN_OK)
        return rc;
    if (closing)
        return CAIRN_OK;
    /* Read the new file in place of the RAM state: the handle's memory
     * drops back to what a fresh open needs. */
    cairn__rx_free_state(r);
    rc = open_file(r, UINT64_MAX);
    if (rc == CAIRN_OK && r->gi.map == NULL)
        rc = cairn__rx_fail(r, CAIRN_EIO, "the graph file was written but could not be read back: %s",
                            r->note);
    if (rc == CAIRN_OK)
        rc = cairn__rx_catch_up(r);
    if (rc != CAIRN_OK)
        r->stale = 1;
    r->delta_records = 0;
    return rc;
}

/* ---- the whole-file merge in the background ---- */

/* A handle's merger waits this long before it starts: a short-lived
 * handle (a CLI call) closes first and is never held up by a merge it
 * would only give up. */
#define RM_DELAY_MS 500

typedef struct rmerge_job {
    cairn_reflex *r;          /* the handle: its mutex and turn at the gate */
    cairn_reflex *t;          /* the state of the files merged */
    const int *stop;          /* the worker's stop (atomic): the close asks it */
    int held;                 /* the gate holds r->mu and the turn */
} rmerge_job;

static int merge_stopped(const int *stop)
{
    return __atomic_load_n(stop, __ATOMIC_ACQUIRE);
}

/* Just before the merged file is put in place: take the handle and the
 * turn, and check that the files merged are still the newest on disk (no
 * whole file or generation came meanwhile). Holds both on success. */
static int merge_gate(void *user)
{
    rmerge_job *job = user;
    cairn_reflex *r = job->r, *t = job->t;
    int rc;

    if (merge_stopped(job->stop))
        return CAIRN_ELOCKED;
    pthread_mutex_lock(&r->mu);
    if ((rc = cairn__rx_turn_begin(r)) != CAIRN_OK) {
        pthread_mutex_unlock(&r->mu);
        return rc;
    }
    if (cairn__seqfile_newest(&cairn__seqfile_graph, r->db->io, r->db->dirfd) != t->chain[0].seq ||
        cairn__seqfile_newest(&cairn__seqfile_graphgen, r->db->io, r->db->dirfd) !=
            t->chain[t->n_chain - 1].seq) {
        (void)cairn__rx_turn_end(r, CAIRN_OK);
        pthread_mutex_unlock(&r->mu);
        return CAIRN_ELOCKED; /* changed meanwhile: given up */
    }
    job->held = 1;
    return CAIRN_OK;
}

/* Fold the newest chain on disk (the whole file and its generations) into
 * a state of its own and write it as one whole file covering the newest
 * generation's seq, in place of them all. The log is not read: the files
 * hold the state, and the records after them stay the handles' own. */
static int merge_files(cairn_reflex *r, const int *stop)
{
    cairn_reflex *t = calloc(1, sizeof *t);
    rmerge_job job;
    int rc;

    if (t == NULL)
        return CAIRN_ENOMEM;
    t->db = r->db;
    t->fold_labels = r->fold_labels;
    pthread_mutex_init(&t->mu, NULL);
    memset(&job, 0, sizeof job);
    job.r = r;
    job.t = t;
    job.stop = stop;
    rc = open_file(t, cairn__handed_seq(r->db));
    if (rc == CAIRN_OK && t->n_chain >= 2 && !merge_stopped(stop))
        rc = write_whole(t, merge_gate, &job, stop);
    if (job.held) {
        (void)cairn__rx_turn_end(r, CAIRN_OK);
        pthread_mutex_unlock(&r->mu);
    }
    cairn__rx_free_state(t);
    pthread_mutex_destroy(&t->mu);
    cairn__errbuf_drop(t);
    free(t);
    return rc;
}

/* The worker's one step (its thread: bgwork.h), after RM_DELAY_MS. */
static void merger_step(cairn__bgwork *w, void *user, int kicked, const int *stop)
{
    (void)w;
    (void)kicked;
    (void)merge_files(user, stop); /* a failure leaves the files as they were */
}

/* At open: a merger when the generations are due for a whole file. */
static void merger_start(cairn_reflex *r)
{
    cairn__bgwork_plan plan = {0};

    if (!r->bg_merge || !cairn__rg_merge_due(r))
        return;
    plan.step = merger_step;
    plan.user = r;
    plan.delay_ms = RM_DELAY_MS;
    plan.once = 1;
    /* Else r->merger stays NULL: the close writes the whole file when due. */
    (void)cairn__bgwork_new(&r->merger, &plan);
}

/* Ask the merger to give up, and wait for it. */
static void merger_stop(cairn_reflex *r)
{
    cairn__bgwork_free(r->merger);
    r->merger = NULL;
}

int cairn_reflex_checkpoint(cairn_reflex *r)
{
    int rc;
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    rc = checkpoint_locked(r, 0);
    pthread_mutex_unlock(&r->mu);
    return rc;
}

void cairn_reflex_close(cairn_reflex *r)
{
    if (r == NULL)
        return;
    merger_stop(r); /* a merge under way is given up: a close writes what changed */
    if (!r->db->read_only && !r->stale && r->delta_records >= R_CHECKPOINT_MIN) {
        /* A failure costs a longer replay next time; one that kills the
         * handle is reported by cairn_close (deferred). */
        int was = cairn__deferred_begin();
        pthread_mutex_lock(&r->mu); /* the turn lets it go while it waits */
        (void)checkpoint_locked(r, 1);
        pthread_mutex_unlock(&r->mu);
        cairn__deferred_end(was);
    }
    cairn__rx_free_state(r);
    pthread_mutex_destroy(&r->mu);
    cairn__errbuf_drop(r);
    free(r);
}

int cairn_reflex_status_get(cairn_reflex *r, cairn_reflex_status *out)
{
    int rc;
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    rc = cairn__rx_catch_up(r);
    memset(out, 0, sizeof *out);
    out->episodes = r->n_epi;
    out->nodes = rx_nodes(r);
    out->edges = rx_edges(r);
    out->patterns = r->n_pat;
    out->updated_ms = r->updated;
    for (size_t i = 0; i < r->n_epi; i++)
        out->processed += r->epi[i].processed;
    if (r->n_chain > 1) {
        cairn__seqfile_name(&cairn__seqfile_graphgen, r->chain[r->n_chain - 1].seq, out->graph_file,
                            sizeof out->graph_file);
        out->graph_covered = r->chain[r->n_chain - 1].seq;
    } else if (r->gi.map != NULL) {
        snprintf(out->graph_file, sizeof out->graph_file, "%s", r->gi.name);
        out->graph_covered = r->gi.covered;
    }
    out->delta_records = r->delta_records;
    out->skipped = r->skipped;
    pthread_mutex_unlock(&r->mu);
    return rc;
}

static int verify_whole(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems_out,
                        int *checked_out)
{
    cairn__err e;
    cairn_stats st;
    gimage g;
    int rc = cairn_stats_get(db, &st);

    if (rc != CAIRN_OK)
        return rc;
    /* As a reader opens it: the newest file the log reaches. One past the
     * log's end is not taken for this log's (MANIFEST's synced_seq tells a
     * lost tail, cairn_verify reports it). */
    rc = cairn__gi_open(&g, db->io, db->dirfd, cairn__handed_seq(db), &e);
    if (rc == CAIRN_OK && (rc = cairn__logbind_check(db, g.name, g.covered, &g.bind, &e)) != CAIRN_OK) {
        g.bad_off = GI_BIND_OFF;
        if (rc == CAIRN_EIO) { /* the log's damage (verify reports it there), not the file's */
            cairn__gi_close(&g);
            if (checked_out != NULL)
                *checked_out = 0;
            if (problems_out != NULL)
                *problems_out = 0;
            return CAIRN_OK;
        }
    }
    if (checked_out != NULL)
        *checked_out = rc != CAIRN_ENOTFOUND;
    if (problems_out != NULL)
        *problems_out = 0;
    if (rc == CAIRN_ENOTFOUND)
        return CAIRN_OK;
    if (rc == CAIRN_OK) {
        cairn__gi_close(&g);
        return CAIRN_OK;
    }
    cairn__gi_close_keep_name(&g);
    if (rc == CAIRN_ENOMEM || rc == CAIRN_EIO)
        return rc;
    if (rc == CAIRN_EVERSION && g.version < GI_VERSION) {
        if (checked_out != NULL)
            *checked_out = 0; /* a cache from an older build, not damage: the next writer rebuilds it */
        return CAIRN_OK;
    }
    if (fn != NULL)
        fn(user, g.name, g.bad_off, rc, e.msg);
    if (problems_out != NULL)
        *problems_out = 1;
    return CAIRN_OK;
}

int cairn_reflex_verify(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems_out,
                        int *checked_out)
{
    uint64_t problems = 0;
    int checked = 0;
    int rc = verify_whole(db, fn, user, &problems, &checked);
    if (rc == CAIRN_OK)
        rc = cairn__rg_verify(db, fn, user, &problems, &checked);
    if (problems_out != NULL)
        *problems_out = problems;
    if (checked_out != NULL)
        *checked_out = checked;
    return rc;
}
