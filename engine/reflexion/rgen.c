/*
 * rgen.c - graph generations (format-spec/graph.md, "Generations"): a
 * close writes what changed since the newest graph file, not the whole
 * graph, and an open folds the generations into RAM on top of the whole
 * file they lie on.
 *
 * The policy is the memory index's rule (engine/log/genpolicy.h) at a
 * ratio of 1, a binary counter over the chain: the new changes take with
 * them every generation at the top that is no larger than what they have
 * gathered so far, so a row is rewritten about log2(chain) times
 * before a whole file takes it, the chain stays short, and the largest
 * generation is never more than the whole file's quarter: once the
 * generations hold that much, the whole file is written instead. With
 * background threads the whole file is written by a merger thread
 * (rcheckpoint.c) and a close writes it only once the generations hold
 * half as many rows as it does.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genpolicy.h"
#include "io.h"
#include "rstate.h"
#include "seqfile.h"
#include "store.h"

#define RG_WHOLE_SHARE 4 /* a whole file once the generations hold 1/4 of its rows */
#define RG_WHOLE_SHARE_BG 2 /* with a merger: a close writes it only at 1/2 */

static uint64_t rows_of(const uint32_t *count)
{
    uint64_t n = 0;
    for (int t = 0; t < GG_TABLES; t++)
        n += count[t];
    return n;
}

static void counts_now(const cairn_reflex *r, uint32_t *c)
{
    c[GG_NAMES] = (uint32_t)r->n_names;
    c[GG_NODES] = rx_nodes(r);
    c[GG_EDGES] = rx_edges(r);
    c[GG_EPISODES] = (uint32_t)r->n_epi;
    c[GG_PATTERNS] = (uint32_t)r->n_pat;
}

void cairn__rg_chain_reset(cairn_reflex *r)
{
    r->n_chain = 0;
    r->epoch = 1;
    r->n_tnodes = r->n_tedges = 0;
    if (r->gi.map == NULL)
        return;
    memset(&r->chain[0], 0, sizeof r->chain[0]);
    r->chain[0].seq = r->gi.covered;
    counts_now(r, r->chain[0].counts);
    r->chain[0].rows = rows_of(r->chain[0].counts);
    r->n_chain = 1;
}

/* Is every file of the chain still in the directory, with no whole file
 * newer? Another process's whole file removes the generations. */
static int chain_on_disk(const cairn_reflex *r)
{
    uint64_t seqs[64];
    size_t n;
    cairn__err e;
    if (cairn__seqfile_list(&cairn__seqfile_graphgen, r->db->io, r->db->dirfd, seqs, 64, &n, &e) !=
        CAIRN_OK)
        return 0; /* read again, where the failure shows */
    if (cairn__seqfile_newest(&cairn__seqfile_graph, r->db->io, r->db->dirfd) != r->chain[0].seq)
        return 0;
    for (size_t p = 1; p < r->n_chain; p++) {
        int found = 0;
        for (size_t i = 0; i < n && i < 64 && !found; i++)
            found = seqs[i] == r->chain[p].seq;
        if (!found)
            return 0;
    }
    return 1;
}

int cairn__rg_merge_due(const cairn_reflex *r)
{
    uint64_t total = 0;
    if (r->n_chain < 2)
        return 0;
    for (size_t p = 1; p < r->n_chain; p++)
        total += r->chain[p].rows;
    return total * RG_WHOLE_SHARE >= r->chain[0].rows;
}

int cairn__rg_policy(const cairn_reflex *r, size_t *jout)
{
    uint64_t acc = r->delta_records ? r->delta_records : 1, total = acc, rows[RG_CHAIN_MAX];
    size_t j;
    if (r->n_chain == 0 || !chain_on_disk(r))
        return 0;
    for (size_t p = 1; p < r->n_chain; p++)
        total += r->chain[p].rows;
    /* With a merger, the whole file is its to write (due at 1/4); a close
     * writes it only when no merger got to it before the generations grew
     * to half of it (handles too short-lived for a merge: CLI calls). */
    if (total * (r->bg_merge ? RG_WHOLE_SHARE_BG : RG_WHOLE_SHARE) >= r->chain[0].rows)
        return 0;
    /* The memory index's rule at ratio 1 (a binary counter), above the
     * whole file: the new generation lies on file j. */
    for (size_t p = 0; p < r->n_chain; p++)
        rows[p] = r->chain[p].rows;
    j = cairn__gen_take_from(rows, r->n_chain, acc, 1, RG_CHAIN_MAX, 1);
    *jout = j - 1;
    return 1;
}

/* ---- writing ---- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The overlay numbers of one table: listed rows below first whose last
 * change is past epoch, ascending, each once. */
static size_t overlays(const uint32_t *list, size_t n, uint32_t first, uint32_t *out,
                       uint32_t (*gen_of)(const cairn_reflex *, uint32_t), const cairn_reflex *r,
                       uint32_t epoch)
{
    size_t k = 0, u = 0;
    for (size_t i = 0; i < n; i++)
        if (list[i] < first && gen_of(r, list[i]) > epoch)
            out[k++] = list[i];
    qsort(out, k, sizeof *out, cmp_u32);
    for (size_t i = 0; i < k; i++)
        if (u == 0 || out[u - 1] != out[i])
            out[u++] = out[i];
    return u;
}

static uint32_t node_gen(const cairn_reflex *r, uint32_t i)
{
    return i < r->base_n ? r->bn[i].gen : r->dn[i - r->base_n].gen;
}

static uint32_t edge_gen(const cairn_reflex *r, uint32_t i)
{
    return i < r->base_m ? r->be[i].gen : r->de[i - r->base_m].gen;
}

typedef struct rg_rows {
    gi_str *names;
    uint32_t *node_no, *edge_no, *epi_no, *pat_no;
    gi_node *nodes;
    gi_edge *edges;
    gi_episode *epis;
    gi_pattern *pats;
} rg_rows;

static void rows_free(rg_rows *w)
{
    free(w->names);
    free(w->node_no);
    free(w->edge_no);
    free(w->epi_no);
    free(w->pat_no);
    free(w->nodes);
    free(w->edges);
    free(w->epis);
    free(w->pats);
}

static gi_str str_of(const char *s)
{
    gi_str v = {s, (uint32_t)strlen(s)};
    return v;
}

/* Every row changed since chain position j into w and in->head's counts. */
static int collect(const cairn_reflex *r, const rchain *b, rg_rows *w, gg_in *in)
{
    uint32_t now[GG_TABLES], *c = in->head.count;
    const uint32_t *first = b->counts;
    size_t k;

    counts_now(r, now);
    memset(w, 0, sizeof *w);
    w->names = malloc((now[GG_NAMES] - first[GG_NAMES] + 1) * sizeof *w->names);
    w->node_no = malloc((r->n_tnodes + now[GG_NODES] - first[GG_NODES] + 1) * sizeof *w->node_no);
    w->edge_no = malloc((r->n_tedges + now[GG_EDGES] - first[GG_EDGES] + 1) * sizeof *w->edge_no);
    w->epi_no = malloc((r->n_epi + 1) * sizeof *w->epi_no);
    w->pat_no = malloc((r->n_pat + 1) * sizeof *w->pat_no);
    if (w->names == NULL || w->node_no == NULL || w->edge_no == NULL || w->epi_no == NULL ||
        w->pat_no == NULL)
        return CAIRN_ENOMEM;
    memcpy(in->head.first, first, sizeof in->head.first);
    for (uint32_t i = first[GG_NAMES]; i < now[GG_NAMES]; i++) {
        w->names[i - first[GG_NAMES]].p = r->names[i];
        w->names[i - first[GG_NAMES]].len = r->name_len[i];
    }
    c[GG_NAMES] = now[GG_NAMES] - first[GG_NAMES];

    k = overlays(r->tnodes, r->n_tnodes, first[GG_NODES], w->node_no, node_gen, r, b->epoch_end);
    for (uint32_t i = first[GG_NODES]; i < now[GG_NODES]; i++)
        w->node_no[k++] = i;
    c[GG_NODES] = (uint32_t)k;
    k = overlays(r->tedges, r->n_tedges, first[GG_EDGES], w->edge_no, edge_gen, r, b->epoch_end);
    for (uint32_t i = first[GG_EDGES]; i < now[GG_EDGES]; i++)
        w->edge_no[k++] = i;
    c[GG_EDGES] = (uint32_t)k;
    k = 0;
    for (uint32_t i = 0; i < now[GG_EPISODES]; i++)
        if (i >= first[GG_EPISODES] || r->epi[i].gen > b->epoch_end)
            w->epi_no[k++] = i;
    c[GG_EPISODES] = (uint32_t)k;
    k = 0;
    for (uint32_t i = 0; i < now[GG_PATTERNS]; i++)
        if (i >= first[GG_PATTERNS] || r->pat[i].gen > b->epoch_end)
            w->pat_no[k++] = i;
    c[GG_PATTERNS] = (uint32_t)k;

    w->nodes = malloc((c[GG_NODES] + 1) * sizeof *w->nodes);
    w->edges = malloc((c[GG_EDGES] + 1) * sizeof *w->edges);
    w->epis = malloc((c[GG_EPISODES] + 1) * sizeof *w->epis);
    w->pats = malloc((c[GG_PATTERNS] + 1) * sizeof *w->pats);
    if (w->nodes == NULL || w->edges == NULL || w->epis == NULL || w->pats == NULL)
        return CAIRN_ENOMEM;
    for (uint32_t i = 0; i < c[GG_NODES]; i++)
        cairn__rx_node(r, w->node_no[i], &w->nodes[i]);
    for (uint32_t i = 0; i < c[GG_EDGES]; i++)
        cairn__rx_edge(r, w->edge_no[i], &w->edges[i]);
    for (uint32_t i = 0; i < c[GG_EPISODES]; i++) {
        const repi *x = &r->epi[w->epi_no[i]];
        gi_episode *o = &w->epis[i];
        o->name = x->name;
        o->outcome = x->outcome;
        o->processed = x->processed;
        o->seq = x->seq;
        o->ts = x->ts;
    }
    for (uint32_t i = 0; i < c[GG_PATTERNS]; i++) {
        const rpat *x = &r->pat[w->pat_no[i]];
        gi_pattern *o = &w->pats[i];
        o->key = x->key;
        o->name = str_of(x->name);
        o->desc = str_of(x->desc);
        o->trigger = str_of(x->trigger);
        o->action = str_of(x->action);
        o->success = x->success;
        o->occurrences = x->occurrences;
        o->last_used = x->last_used;
        o->created = x->created;
        o->eps = x->eps;
        o->n_eps = x->n_eps;
    }
    in->names = w->names;
    in->node_no = w->node_no;
    in->nodes = w->nodes;
    in->edge_no = w->edge_no;
    in->edges = w->edges;
    in->episode_no = w->epi_no;
    in->episodes = w->epis;
    in->pattern_no = w->pat_no;
    in->patterns = w->pats;
    return CAIRN_OK;
}

int cairn__rg_write(cairn_reflex *r, size_t j)
{
    const rchain *b = &r->chain[j];
    cairn__err e;
    rg_rows w;
    gg_in in;
    uint64_t len = 0;
    int rc;

    memset(&in, 0, sizeof in);
    in.head.covered = r->folded;
    in.head.base = b->seq;
    in.head.base_gen = j > 0;
    in.head.skipped = r->skipped;
    in.head.updated = r->updated;
    rc = cairn__logbind_make(r->db, in.head.covered, &in.head.bind, &e);
    if (rc != CAIRN_OK) {
        rc = cairn__rx_fail(r, rc, "graph generation: %s", e.msg);
        return rc;
    }
    rc = collect(r, b, &w, &in);
    if (rc == CAIRN_OK)
        rc = cairn__gg_write(r->db->io, r->db->dirfd, &in, &len, &e);
    else
        snprintf(e.msg, sizeof e.msg, "no memory for a graph generation");
    rows_free(&w);
    if (rc == CAIRN_OK) {
        /* Listed with the chain it lies on; the generations not in it go
         * (those it took in, and any another process left). */
        uint64_t keep[RG_CHAIN_MAX];
        for (size_t p = 1; p <= j; p++)
            keep[p - 1] = r->chain[p].seq;
        rc = cairn__seqfile_publish(r->db, &cairn__seqfile_graphgen, in.head.covered, keep, j, &e);
    }
    if (rc != CAIRN_OK)
        return cairn__rx_fail(r, rc, "%s", e.msg);
    r->n_chain = j + 1;
    memset(&r->chain[r->n_chain], 0, sizeof r->chain[0]);
    r->chain[r->n_chain].seq = in.head.covered;
    r->chain[r->n_chain].epoch_end = r->epoch;
    counts_now(r, r->chain[r->n_chain].counts);
    r->chain[r->n_chain].rows = rows_of(in.head.count);
    r->n_chain++;
    r->epoch++;
    r->delta_records = 0;
    return CAIRN_OK;
}

/* ---- reading ---- */

typedef struct link {
    uint8_t *map;
    size_t len;
    gg_head h;
    char name[GI_NAME_MAX];
    cairn__fileid id; /* the file the name held when mapped */
} link;

static int v_name(void *u, uint32_t no, const char *s, uint32_t len)
{
    cairn_reflex *r = u;
    uint32_t got = len > CAIRN_LABEL_MAX ? R_NONE : cairn__rx_name(r, s, len, 1);
    if (got == R_NONE) /* the parser bounds the length: no memory */
        return len > CAIRN_LABEL_MAX ? CAIRN_ECORRUPT : CAIRN_ENOMEM;
    return got != no ? CAIRN_ECORRUPT : CAIRN_OK;
}

static int v_node(void *u, uint32_t no, const gi_node *n)
{
    return cairn__rx_put_node(u, no, n);
}

static int v_edge(void *u, uint32_t no, const gi_edge *x)
{
    return cairn__rx_put_edge(u, no, x);
}

static int v_episode(void *u, uint32_t no, const gi_episode *x)
{
    return cairn__rx_put_episode(u, no, x);
}

static int v_pattern(void *u, uint32_t no, const gi_pattern *p)
{
    return cairn__rx_put_pattern(u, no, p);
}

static const gg_visit fold_rows = {v_name, v_node, v_edge, v_episode, v_pattern};

/* The newest seq of a kind at most max (0: none). */
static uint64_t newest_upto(const cairn__seqfile_kind *k, cairn_db *db, uint64_t max)
{
    uint64_t seqs[64], best = 0;
    size_t n;
    cairn__err e;
    if (cairn__seqfile_list(k, db->io, db->dirfd, seqs, 64, &n, &e) != CAIRN_OK)
        return 0; /* none: the whole file's open meets the failure */
    for (size_t i = 0; i < n && i < 64; i++)
        if (seqs[i] <= max && seqs[i] > best)
            best = seqs[i];
    return best;
}

/* The chain under the newest generation at most last_seq, mapped and
 * checked, newest first in l; the whole file's seq in *whole. */
static int map_chain(cairn_reflex *r, uint64_t last_seq, link *l, size_t *n, uint64_t *whole,
                     char *bad, cairn__fileid *bad_id, cairn__err *e, uint64_t *bad_off)
{
    uint64_t seq = newest_upto(&cairn__seqfile_graphgen, r->db, last_seq);
    int rc;

    *n = 0;
    /* A whole file newer than every generation stands alone. */
    if (seq == 0 || newest_upto(&cairn__seqfile_graph, r->db, last_seq) > seq)
        return CAIRN_ENOTFOUND;
    for (;;) {
        link *k = &l[*n];
        if (*n == RG_CHAIN_MAX - 1) /* not damage: the whole file alone, nothing removed */
            return cairn__fail(e, CAIRN_ENOTFOUND, "%s: more generations lie on one another than "
                               "a chain holds (%d)", k[-1].name, RG_CHAIN_MAX - 1);
        memset(&k->id, 0, sizeof k->id);
        rc = cairn__gg_map(r->db->io, r->db->dirfd, seq, &k->map, &k->len, k->name,
                           sizeof k->name, &k->id, e);
        snprintf(bad, GI_NAME_MAX, "%s", rc == CAIRN_ENOTFOUND && *n > 0 ? l[*n - 1].name : k->name);
        *bad_id = rc == CAIRN_ENOTFOUND && *n > 0 ? l[*n - 1].id : k->id;
        if (rc == CAIRN_ENOTFOUND && *n > 0)
            return cairn__fail(e, CAIRN_ENOTFOUND, "%s: the generation it lies on is gone",
                               l[*n - 1].name);
        if (rc != CAIRN_OK)
            return rc;
        ++*n;
        rc = cairn__gg_parse(k->map, k->len, k->name, &k->h, NULL, NULL, bad_off, e);
        if (rc == CAIRN_OK && k->h.covered != seq)
            rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: covers seq %" PRIu64 ", not the one its name says",
                             k->name, k->h.covered);
        if (rc == CAIRN_OK &&
            (rc = cairn__logbind_check(r->db, k->name, k->h.covered, &k->h.bind, e)) != CAIRN_OK)
            *bad_off = GG_HEAD;
        if (rc != CAIRN_OK)
            return rc;
        if (!k->h.base_gen) {
            *whole = k->h.base;
            return CAIRN_OK;
        }
        seq = k->h.base;
    }
}

int cairn__rg_open_chain(cairn_reflex *r, uint64_t last_seq)
{
    link l[RG_CHAIN_MAX];
    size_t n = 0;
    uint64_t whole = 0, bad_off = 0;
    char bad[GI_NAME_MAX] = "";
    cairn__fileid bad_id;
    cairn__err e;
    int rc;

    e.msg[0] = 0;
    memset(&bad_id, 0, sizeof bad_id);
    rc = map_chain(r, last_seq, l, &n, &whole, bad, &bad_id, &e, &bad_off);
    if (rc == CAIRN_OK)
        bad[0] = 0; /* from here on a failure is the whole file's or a fold's */
    if (rc == CAIRN_OK) {
        rc = cairn__gi_open(&r->gi, r->db->io, r->db->dirfd, whole, &e);
        if (rc == CAIRN_OK && r->gi.covered != whole)
            rc = cairn__fail(&e, CAIRN_ENOTFOUND, "%s: the whole graph file it lies on is gone",
                             l[n - 1].name);
        if (rc == CAIRN_OK)
            rc = cairn__logbind_check(r->db, r->gi.name, r->gi.covered, &r->gi.bind, &e);
        if (rc == CAIRN_OK && (rc = cairn__rx_load_tables(r)) != CAIRN_OK && rc != CAIRN_ENOMEM)
            snprintf(e.msg, sizeof e.msg, "%s: an episode or name is listed twice", r->gi.name);
        if (rc == CAIRN_OK)
            cairn__rg_chain_reset(r);
        /* Oldest generation first. */
        for (size_t i = n; rc == CAIRN_OK && i-- > 0;) {
            link *k = &l[i];
            uint32_t now[GG_TABLES];
            counts_now(r, now);
            if (memcmp(now, k->h.first, sizeof now) != 0) {
                rc = cairn__fail(&e, CAIRN_ECORRUPT, "%s: its tables do not start where the file "
                                 "below ends", k->name);
                snprintf(bad, sizeof bad, "%s", k->name);
                bad_id = k->id;
                break;
            }
            r->epoch = (uint32_t)(n - i);
            rc = cairn__gg_parse(k->map, k->len, k->name, &k->h, &fold_rows, r, &bad_off, &e);
            if (rc != CAIRN_OK) {
                if (rc != CAIRN_ENOMEM && e.msg[0] == 0)
                    snprintf(e.msg, sizeof e.msg, "%s: a row does not fit the state below it",
                             k->name);
                snprintf(bad, sizeof bad, "%s", k->name);
                bad_id = k->id;
                break;
            }
            memset(&r->chain[r->n_chain], 0, sizeof r->chain[0]);
            r->chain[r->n_chain].seq = k->h.covered;
            r->chain[r->n_chain].epoch_end = r->epoch;
            counts_now(r, r->chain[r->n_chain].counts);
            r->chain[r->n_chain].rows = rows_of(k->h.count);
            r->n_chain++;
            r->folded = k->h.covered;
            r->skipped = k->h.skipped;
            r->updated = k->h.updated;
        }
    }
    if (rc == CAIRN_OK) {
        r->epoch = (uint32_t)n + 1;
        r->delta_records = 0;
    } else if (rc != CAIRN_ENOMEM) {
        /* Not usable: say why; a writer removes a damaged generation, and
         * the caller opens the whole file alone. */
        if (bad[0] != 0 && !r->db->read_only && (rc == CAIRN_ECORRUPT || rc == CAIRN_ECHECKSUM))
            cairn__seqfile_set_aside(r->db, &cairn__seqfile_graphgen, bad, &bad_id);
        cairn__rx_free_state(r);
        if (e.msg[0] != 0 && rc != CAIRN_ENOTFOUND)
            snprintf(r->note, sizeof r->note, "%.200s; the generations were not used", e.msg);
        rc = CAIRN_ENOTFOUND;
    }
    for (size_t i = 0; i < n; i++)
        cairn__gg_unmap(l[i].map, l[i].len);
    return rc;
}

/* ---- verify ---- */

int cairn__rg_verify(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems,
                     int *checked)
{
    link l[RG_CHAIN_MAX];
    cairn_reflex probe;
    size_t n = 0;
    uint64_t whole = 0, bad_off = 0;
    char bad[GI_NAME_MAX] = "";
    cairn__fileid bad_id;
    cairn__err e;
    int rc;

    memset(&probe, 0, sizeof probe);
    probe.db = db;
    e.msg[0] = 0;
    rc = map_chain(&probe, cairn__handed_seq(db), l, &n, &whole, bad, &bad_id, &e, &bad_off);
    for (size_t i = 0; i < n; i++)
        cairn__gg_unmap(l[i].map, l[i].len);
    if (rc == CAIRN_ENOTFOUND && n == 0)
        return CAIRN_OK;
    *checked += (int)n;
    /* EIO: the log's damage under an anchor (verify reports it there), or
     * a file that could not be read, which the next writer replaces. */
    if (rc == CAIRN_OK || rc == CAIRN_ENOMEM || rc == CAIRN_EIO || rc == CAIRN_ENOTFOUND)
        return rc == CAIRN_ENOMEM ? rc : CAIRN_OK;
    if (fn != NULL)
        fn(user, bad, bad_off, rc, e.msg);
    ++*problems;
    return CAIRN_OK;
}
