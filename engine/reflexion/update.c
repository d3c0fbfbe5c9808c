/*
 * update.c - turning episodes into the graph (ReflexionMemory's Update-CausalGraph),
 * and importing an existing causal-graph.json.
 *
 * Update, per episode not yet folded (format-spec/reflexion.md, "Update"):
 *   nodes    a decision node "TYPE: CHOSEN" per decision; a node per event,
 *            "TYPE: CONTENT", of the event's type; an outcome node
 *            "Outcome: OUTCOME - TASK".
 *   edges    the episode's own links: caused_by (cause -> event, causes,
 *            0.8), leads_to (event -> next, causes, 0.8), effects
 *            (decision -> effect, causes, 0.7); an error to the first of
 *            the next five events that is a milestone saying fix, recover
 *            or resolve (causes, 0.8, ReflexionMemory's rule); every decision to
 *            the outcome node (causes; 0.9 success, 0.5 partial, 0.2
 *            failure).
 *   patterns a decision that succeeded: "TYPE pattern" (trigger: context,
 *            action: chosen, 1.0); one that failed: "TYPE anti-pattern"
 *            (action "AVOID: chosen", 0.0), as ReflexionMemory does.
 * All of it, and a causal.update record naming the episodes, is one commit.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "rstate.h"
#include "utf8.h"

typedef struct plan {
    rchange *c;
    size_t n, cap;
    char **own;               /* strings the changes point to */
    size_t n_own, cap_own;
    uint64_t *new_nodes, *new_edges; /* keys counted as new in this plan */
    size_t n_new_nodes, n_new_edges, cap_nn, cap_ne;
    uint64_t nodes_added, edges_added, patterns_added;
    char **new_pats;
    size_t n_new_pats, cap_np;
    int oom;
    int once;                 /* an update: what the graph has from an episode
                                 already (an imported graph listed it) is not
                                 counted again */
} plan;

static void plan_free(plan *p)
{
    for (size_t i = 0; i < p->n_own; i++)
        free(p->own[i]);
    free(p->own);
    free(p->c);
    free(p->new_nodes);
    free(p->new_edges);
    free(p->new_pats);
}

static char *keep(plan *p, char *s)
{
    if (s == NULL || cairn__grow(NULL, (void **)&p->own, &p->cap_own, p->n_own + 1, sizeof *p->own) != 0) {
        free(s);
        p->oom = 1;
        return NULL;
    }
    p->own[p->n_own++] = s;
    return s;
}

static rchange *add(plan *p)
{
    if (cairn__grow(NULL, (void **)&p->c, &p->cap, p->n + 1, sizeof *p->c) != 0) {
        p->oom = 1;
        return NULL;
    }
    memset(&p->c[p->n], 0, sizeof *p->c);
    return &p->c[p->n++];
}

static int seen(uint64_t *v, size_t n, uint64_t k)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == k)
            return 1;
    return 0;
}

static void note_key(plan *p, uint64_t **v, size_t *n, size_t *cap, uint64_t k)
{
    if (cairn__grow(NULL, (void **)v, cap, *n + 1, sizeof **v) != 0)
        p->oom = 1;
    else
        (*v)[(*n)++] = k;
}

/* A node change for label; its key into *key. Labels are cut to
 * CAIRN_LABEL_MAX bytes (on a UTF-8 boundary). */
/* Does the list eps[0..n) hold the episode `episode`? */
static int lists(cairn_reflex *r, const uint32_t *eps, uint32_t n, const char *episode)
{
    uint32_t name = cairn__rx_name(r, episode, strlen(episode), 0);
    for (uint32_t i = 0; name != R_NONE && i < n; i++)
        if (eps[i] == name)
            return 1;
    return 0;
}

static void plan_node(plan *p, cairn_reflex *r, uint32_t type, const char *label,
                      const char *episode, int64_t created, uint64_t *key)
{
    size_t len = strlen(label);
    uint32_t i;
    rchange *c;
    if (len > CAIRN_LABEL_MAX) {
        len = CAIRN_LABEL_MAX;
        while (len > 0 && ((unsigned char)label[len] & 0xc0) == 0x80)
            len--;
    }
    if (p->once && episode != NULL && len > 0 &&
        (i = cairn__rx_find_label(r, label, len, key)) != R_NONE) {
        gi_node n;
        cairn__rx_node(r, i, &n);
        if (lists(r, n.eps, n.n_eps, episode))
            return; /* counted for this episode already: *key is its key */
    }
    if (len == 0 || (c = add(p)) == NULL) {
        *key = 0;
        return;
    }
    c->rec = CAIRN_REC_CAUSAL_NODE;
    c->type = type;
    c->label = label;
    c->len = len;
    c->episode = episode;
    c->ep_len = episode ? strlen(episode) : 0;
    c->created = created;
    if (cairn__rx_find_label(r, label, len, key) == R_NONE &&
        !seen(p->new_nodes, p->n_new_nodes, *key)) {
        note_key(p, &p->new_nodes, &p->n_new_nodes, &p->cap_nn, *key);
        p->nodes_added++;
    }
}

static void plan_edge(plan *p, cairn_reflex *r, uint64_t s, uint64_t d, uint32_t type,
                      double w, const char *episode, int64_t created)
{
    rchange *c;
    uint32_t si, di, ei;
    int exists = 0;
    if (s == 0 || d == 0)
        return;
    if (p->once && episode != NULL && (si = cairn__rx_find_key(r, s)) != R_NONE &&
        (di = cairn__rx_find_key(r, d)) != R_NONE &&
        (ei = cairn__rx_find_edge(r, si, di, type)) != R_NONE) {
        gi_edge e;
        cairn__rx_edge(r, ei, &e);
        if (lists(r, e.eps, e.n_eps, episode))
            return; /* this episode's evidence is in it already */
    }
    if ((c = add(p)) == NULL)
        return;
    c->rec = CAIRN_REC_CAUSAL_EDGE;
    c->src = s;
    c->dst = d;
    c->type = type;
    c->weight = w;
    c->episode = episode;
    c->ep_len = episode ? strlen(episode) : 0;
    c->created = created;
    si = cairn__rx_find_key(r, s);
    di = cairn__rx_find_key(r, d);
    if (si != R_NONE && di != R_NONE)
        exists = cairn__rx_find_edge(r, si, di, type) != R_NONE;
    uint64_t ek = (s * 0x9e3779b97f4a7c15ULL ^ d) * 4 + type;
    if (!exists && !seen(p->new_edges, p->n_new_edges, ek)) {
        note_key(p, &p->new_edges, &p->n_new_edges, &p->cap_ne, ek);
        p->edges_added++;
    }
}

static void plan_pattern(plan *p, cairn_reflex *r, const char *name, const char *trigger,
                         const char *action, const char *desc, double success, const char *episode)
{
    rchange *c;
    int exists = 0;
    if (p->once && episode != NULL)
        for (size_t i = 0; i < r->n_pat; i++)
            if (cairn__rx_same_name(r, r->pat[i].name, name) &&
                lists(r, r->pat[i].eps, r->pat[i].n_eps, episode))
                return; /* this episode's occurrence is in it already */
    if ((c = add(p)) == NULL)
        return;
    c->rec = CAIRN_REC_PATTERN;
    c->pat.name = name;
    c->pat.trigger = trigger[0] ? trigger : "(none)";
    c->pat.action = action[0] ? action : "(none)";
    c->pat.description = desc;
    c->pat.success_rate = success;
    c->pat.episode = episode;
    for (size_t i = 0; i < r->n_pat && !exists; i++)
        exists = cairn__rx_same_name(r, r->pat[i].name, name);
    for (size_t i = 0; i < p->n_new_pats && !exists; i++)
        exists = cairn__rx_same_name(r, p->new_pats[i], name);
    if (!exists) {
        if (cairn__grow(NULL, (void **)&p->new_pats, &p->cap_np, p->n_new_pats + 1,
                        sizeof *p->new_pats) != 0)
            p->oom = 1;
        else
            p->new_pats[p->n_new_pats++] = (char *)(uintptr_t)name;
        p->patterns_added++;
    }
}

static const char *s_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static char *fmt2(const char *a, const char *sep, const char *b)
{
    size_t la = strlen(a), ls = strlen(sep), lb = strlen(b);
    char *s = malloc(la + ls + lb + 1);
    if (s != NULL) {
        memcpy(s, a, la);
        memcpy(s + la, sep, ls);
        memcpy(s + la + ls, b, lb + 1);
    }
    return s;
}

static int has_word(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (; *s; s++)
        if (strncasecmp(s, w, n) == 0)
            return 1;
    return 0;
}

/* The key of the node an episode-local id (d001, e002) names, or 0. */
static uint64_t local(const cJSON *ids, const char *id)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ids, id);
    uint64_t k = 0;
    if (cJSON_IsString(v))
        (void)cairn__rx_parse_id(v->valuestring, 'n', &k);
    return k;
}

static void plan_episode(plan *p, cairn_reflex *r, cJSON *ep, cJSON *ids)
{
    const char *eid = keep(p, fmt2(s_of(ep, "id"), "", ""));
    const cJSON *decs = cJSON_GetObjectItemCaseSensitive(ep, "decisions");
    const cJSON *evs = cJSON_GetObjectItemCaseSensitive(ep, "events"), *x, *y;
    const char *oc = s_of(ep, "outcome");
    uint64_t out_key, k;
    char idbuf[CAIRN_NODE_ID_MAX + 1];
    char *label;

    if (eid == NULL)
        return;
    label = keep(p, fmt2("Outcome: ", oc, ""));
    label = label ? keep(p, fmt2(label, " - ", s_of(ep, "task"))) : NULL;
    if (label == NULL)
        return;
    plan_node(p, r, CAIRN_NODE_OUTCOME, label, eid, 0, &out_key);
    cJSON_ArrayForEach(x, decs) {
        const char *chosen = s_of(x, "chosen")[0] ? s_of(x, "chosen") : s_of(x, "context");
        if ((label = keep(p, fmt2(s_of(x, "type"), ": ", chosen))) == NULL)
            return;
        plan_node(p, r, CAIRN_NODE_DECISION, label, eid, 0, &k);
        cairn__rx_id('n', k, idbuf);
        cJSON_AddStringToObject(ids, s_of(x, "id"), idbuf);
    }
    cJSON_ArrayForEach(x, evs) {
        unsigned t;
        if (cairn_node_type_parse(s_of(x, "type"), &t) != CAIRN_OK)
            t = CAIRN_NODE_EVENT;
        if ((label = keep(p, fmt2(s_of(x, "type"), ": ", s_of(x, "content")))) == NULL)
            return;
        plan_node(p, r, t, label, eid, 0, &k);
        cairn__rx_id('n', k, idbuf);
        cJSON_AddStringToObject(ids, s_of(x, "id"), idbuf);
    }
    /* Edges, now that every local id has its node. */
    cJSON_ArrayForEach(x, decs) {
        const char *doc = s_of(x, "outcome");
        int o = cairn__rx_outcome(doc, strlen(doc));
        uint64_t me = local(ids, s_of(x, "id"));
        cJSON_ArrayForEach(y, cJSON_GetObjectItemCaseSensitive(x, "effects"))
            if (cJSON_IsString(y))
                plan_edge(p, r, me, local(ids, y->valuestring), CAIRN_EDGE_CAUSES, 0.7, eid, 0);
        plan_edge(p, r, me, out_key, CAIRN_EDGE_CAUSES, o == 0 ? 0.9 : o == 1 ? 0.5 : 0.2, eid, 0);
        if (o == 0 || o == 2) {
            const char *ctx = s_of(x, "context");
            char *trig = ctx[0] ? (char *)(uintptr_t)ctx
                                : keep(p, fmt2("When ", s_of(x, "type"), " decision needed"));
            char *name = keep(p, fmt2(s_of(x, "type"), " ", o == 0 ? "pattern" : "anti-pattern"));
            char *desc = keep(p, fmt2(o == 0 ? "Pattern from " : "Anti-pattern from ", eid, ""));
            char *act = o == 0 ? (char *)(uintptr_t)s_of(x, "chosen")
                               : keep(p, fmt2("AVOID: ", s_of(x, "chosen"), ""));
            if (trig && name && desc && act)
                plan_pattern(p, r, name, trig, act, desc, o == 0 ? 1.0 : 0.0, eid);
        }
    }
    int i = 0;
    cJSON_ArrayForEach(x, evs) {
        uint64_t me = local(ids, s_of(x, "id"));
        cJSON_ArrayForEach(y, cJSON_GetObjectItemCaseSensitive(x, "caused_by"))
            if (cJSON_IsString(y))
                plan_edge(p, r, local(ids, y->valuestring), me, CAIRN_EDGE_CAUSES, 0.8, eid, 0);
        cJSON_ArrayForEach(y, cJSON_GetObjectItemCaseSensitive(x, "leads_to"))
            if (cJSON_IsString(y))
                plan_edge(p, r, me, local(ids, y->valuestring), CAIRN_EDGE_CAUSES, 0.8, eid, 0);
        if (strcmp(s_of(x, "type"), "error") == 0) {
            int j = 0;
            cJSON_ArrayForEach(y, evs) {
                if (j > i && j <= i + 5 && strcmp(s_of(y, "type"), "milestone") == 0 &&
                    (has_word(s_of(y, "content"), "fix") || has_word(s_of(y, "content"), "recover") ||
                     has_word(s_of(y, "content"), "resolve"))) {
                    plan_edge(p, r, me, local(ids, s_of(y, "id")), CAIRN_EDGE_CAUSES, 0.8, eid, 0);
                    break;
                }
                j++;
            }
        }
        i++;
    }
}

int cairn_causal_update(cairn_reflex *r, const cairn_causal_update_opts *o,
                        cairn_causal_update_stats *out)
{
    cairn_causal_update_opts def = CAIRN_CAUSAL_UPDATE_INIT;
    plan p;
    cJSON **eps = NULL, *ids = NULL;
    const char **names = NULL;
    size_t *lens = NULL, ne = 0;
    int rc, turn = 0;

    if (o == NULL)
        o = &def;
    memset(out, 0, sizeof *out);
    memset(&p, 0, sizeof p);
    p.once = 1;
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    /* A dry run only reads; an update plans on the log as it is. */
    rc = o->dry_run ? cairn__rx_catch_up(r) : cairn__rx_turn_begin(r);
    turn = rc == CAIRN_OK && !o->dry_run;
    if (rc == CAIRN_OK && ((eps = calloc(r->n_epi + 1, sizeof *eps)) == NULL ||
                           (names = calloc(r->n_epi + 1, sizeof *names)) == NULL ||
                           (lens = calloc(r->n_epi + 1, sizeof *lens)) == NULL))
        rc = cairn__rx_fail(r, CAIRN_ENOMEM, "no memory");
    for (size_t i = 0; rc == CAIRN_OK && i < r->n_epi; i++) {
        const repi *e = &r->epi[i];
        cairn_record *rec = NULL;
        if (e->processed || e->ts < o->since_ms)
            continue;
        rc = cairn_get(r->db, e->seq, &rec);
        if (rc != CAIRN_OK) {
            rc = cairn__rx_fail(r, rc, "reading episode %s: %s", r->names[e->name], cairn_errmsg(r->db));
            break;
        }
        eps[ne] = cJSON_ParseWithLength(rec->json, rec->json_len);
        cairn_record_free(r->db, rec);
        if (eps[ne] == NULL)
            continue; /* cannot happen for a folded episode; pass it over */
        names[ne] = r->names[e->name];
        lens[ne] = r->name_len[e->name];
        ids = cJSON_CreateObject();
        plan_episode(&p, r, eps[ne], ids);
        cJSON_Delete(ids);
        ne++;
    }
    if (rc == CAIRN_OK && ne > 0) {
        rchange *c = add(&p);
        if (c != NULL) {
            c->rec = CAIRN_REC_CAUSAL_UPDATE;
            c->ids = names;
            c->id_lens = lens;
            c->n_ids = ne;
        }
    }
    if (rc == CAIRN_OK && p.oom)
        rc = cairn__rx_fail(r, CAIRN_ENOMEM, "no memory");
    if (rc == CAIRN_OK && ne > 0 && !o->dry_run)
        rc = cairn__rx_commit(r, p.c, p.n);
    if (rc == CAIRN_OK) {
        out->episodes_processed = ne;
        out->nodes_added = p.nodes_added;
        out->edges_added = p.edges_added;
        out->patterns_added = p.patterns_added;
    }
    if (turn)
        rc = cairn__rx_turn_end(r, rc);
    pthread_mutex_unlock(&r->mu);
    for (size_t i = 0; i < ne; i++)
        cJSON_Delete(eps[i]);
    free(eps);
    free(names);
    free(lens);
    plan_free(&p);
    return rc;
}

/* ---- import ---- */

static int64_t created_of(const cJSON *o)
{
    const char *s = s_of(o, "created");
    int64_t ms;
    return s[0] && cairn__rx_parse_time(s, strlen(s), &ms) == CAIRN_OK && ms != 0 ? ms : 0;
}

int cairn_causal_import(cairn_reflex *r, const char *json, size_t len,
                        cairn_causal_import_stats *out)
{
    cJSON *g = cJSON_ParseWithLength(json, len), *x, *y, *ids = cJSON_CreateObject();
    const cJSON *nodes, *edges, *pats;
    cairn__err e;
    plan p;
    int rc = CAIRN_OK, turn = 0;

    memset(out, 0, sizeof *out);
    memset(&p, 0, sizeof p);
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    if (g == NULL || !cJSON_IsObject(g)) {
        rc = cairn__rx_fail(r, CAIRN_EINVAL, "causal graph: not a JSON object");
        goto out;
    }
    /* All of it follows the rule for text, before anything is planned: a
     * label the fold could not take would be counted here and dropped at
     * replay. */
    if (cairn__utf8_check_json(&e, "causal graph: ", NULL, json, len) != CAIRN_OK) {
        rc = cairn__rx_fail(r, CAIRN_EINVAL, "%s", e.msg);
        goto out;
    }
    nodes = cJSON_GetObjectItemCaseSensitive(g, "nodes");
    edges = cJSON_GetObjectItemCaseSensitive(g, "edges");
    pats = cJSON_GetObjectItemCaseSensitive(g, "patterns");
    if ((nodes && !cJSON_IsArray(nodes)) || (edges && !cJSON_IsArray(edges)) ||
        (pats && !cJSON_IsArray(pats))) {
        rc = cairn__rx_fail(r, CAIRN_EINVAL, "causal graph: nodes, edges and patterns must be arrays");
        goto out;
    }
    if ((rc = cairn__rx_turn_begin(r)) != CAIRN_OK)
        goto out;
    turn = 1;
    if (ids == NULL)
        goto out;
    cJSON_ArrayForEach(x, nodes) {
        const cJSON *eps = cJSON_GetObjectItemCaseSensitive(x, "episodes");
        const char *label = s_of(x, "label");
        unsigned t;
        uint64_t k = 0;
        char idbuf[CAIRN_NODE_ID_MAX + 1];
        int any = 0;
        if (!cJSON_IsObject(x) || cairn_node_type_parse(s_of(x, "type"), &t) != CAIRN_OK ||
            label[0] == 0 || s_of(x, "id")[0] == 0) {
            out->skipped++;
            continue;
        }
        /* One record per episode that saw it, so frequency comes back. */
        cJSON_ArrayForEach(y, eps)
            if (cJSON_IsString(y)) {
                plan_node(&p, r, t, label, y->valuestring, created_of(x), &k);
                any = 1;
            }
        if (!any)
            plan_node(&p, r, t, label, NULL, created_of(x), &k);
        cairn__rx_id('n', k, idbuf);
        cJSON_DeleteItemFromObjectCaseSensitive(ids, s_of(x, "id"));
        cJSON_AddStringToObject(ids, s_of(x, "id"), idbuf);
        out->nodes++;
    }
    cJSON_ArrayForEach(x, edges) {
        uint64_t s = local(ids, s_of(x, "source")), d = local(ids, s_of(x, "target"));
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(x, "weight");
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(x, "evidence_count");
        const cJSON *contrib = cJSON_GetObjectItemCaseSensitive(x, "contributions");
        const cJSON *eps = cJSON_GetObjectItemCaseSensitive(x, "episodes");
        unsigned t;
        int any = 0;
        if (!cJSON_IsObject(x) || s == 0 || d == 0 ||
            cairn_edge_type_parse(s_of(x, "type"), &t) != CAIRN_OK || !cJSON_IsNumber(w) ||
            !(w->valuedouble >= 0 && w->valuedouble <= 1)) {
            out->skipped++;
            continue;
        }
        cJSON_ArrayForEach(y, eps) {
            const cJSON *c = cJSON_IsString(y) ? cJSON_GetObjectItemCaseSensitive(contrib, y->valuestring)
                                               : NULL;
            if (cJSON_IsNumber(c) && c->valuedouble >= 0 && c->valuedouble <= 1) {
                plan_edge(&p, r, s, d, t, c->valuedouble, y->valuestring, created_of(x));
                any = 1;
            }
        }
        /* No contributions: the weight, evidence_count times. */
        for (double k = 0; !any && k < (cJSON_IsNumber(ev) && ev->valuedouble >= 1 &&
                                                ev->valuedouble <= 1e6 ? ev->valuedouble : 1);
             k++)
            plan_edge(&p, r, s, d, t, w->valuedouble, NULL, created_of(x));
        out->edges++;
    }
    cJSON_ArrayForEach(x, pats) {
        const char *name = s_of(x, "name"), *trig = s_of(x, "trigger"), *act = s_of(x, "action");
        const cJSON *sr = cJSON_GetObjectItemCaseSensitive(x, "success_rate");
        const cJSON *occ = cJSON_GetObjectItemCaseSensitive(x, "occurrences");
        const cJSON *contrib = cJSON_GetObjectItemCaseSensitive(x, "contributions");
        const cJSON *eps = cJSON_GetObjectItemCaseSensitive(x, "episodes");
        int any = 0;
        if (!cJSON_IsObject(x) || name[0] == 0 || !cJSON_IsNumber(sr) ||
            !(sr->valuedouble >= 0 && sr->valuedouble <= 1)) {
            out->skipped++;
            continue;
        }
        cJSON_ArrayForEach(y, eps) {
            const cJSON *c = cJSON_IsString(y) ? cJSON_GetObjectItemCaseSensitive(contrib, y->valuestring)
                                               : NULL;
            if (cJSON_IsNumber(c) && c->valuedouble >= 0 && c->valuedouble <= 1) {
                plan_pattern(&p, r, name, trig, act, s_of(x, "description"), c->valuedouble,
                             y->valuestring);
                any = 1;
            }
        }
        for (double k = 0; !any && k < (cJSON_IsNumber(occ) && occ->valuedouble >= 1 &&
                                                occ->valuedouble <= 1e6 ? occ->valuedouble : 1);
             k++)
            plan_pattern(&p, r, name, trig, act, s_of(x, "description"), sr->valuedouble, NULL);
        out->patterns++;
    }
    /* every node of the file that added no new label joined another */
    out->merged = out->nodes - p.nodes_added;
    if (p.oom)
        rc = cairn__rx_fail(r, CAIRN_ENOMEM, "no memory");
    else if (p.n > 0)
        rc = cairn__rx_commit(r, p.c, p.n);
out:
    if (turn)
        rc = cairn__rx_turn_end(r, rc);
    pthread_mutex_unlock(&r->mu);
    cJSON_Delete(g);
    cJSON_Delete(ids);
    plan_free(&p);
    return rc;
}
