/*
 * api_reflex.c - the reflexion tools: episodes (new, get, list), the causal
 * graph (node, edge, path, status) and patterns (add, list, anti).
 *
 * Episodes, nodes, edges and patterns print as `cairn episode|causal|
 * pattern ... --format json` prints them (the ReflexionMemory schema,
 * snake_case).
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "civil.h"
#include "render.h"

#define END {NULL, 0, 0, 0, 0, NULL, NULL}
#define A_EPISODE                                                                          \
    {"episode", API_STRING, 0, 0, CAIRN_LABEL_MAX, NULL,                                  \
     "The episode this comes from (its id, episode-<session>), if any."}

static int fail_rx(api_call *c, int rc)
{
    return cairn__api_fail_msg(c, rc, c->s->rx ? cairn_reflex_errmsg(c->s->rx) : NULL);
}

/* Take a JSON text a reflexion call returned (free()d here) as item name
 * of the result. */
static int add_text(api_call *c, const char *name, char *text)
{
    cJSON *v = cJSON_Parse(text);
    free(text);
    if (v == NULL)
        return cairn__api_fail(c, CAIRN_ENOMEM, "out of memory");
    cJSON_AddItemToObject(c->out, name, v);
    return CAIRN_OK;
}

/* ---- episodes ------------------------------------------------------------------ */

static const api_param episode_new_params[] = {
    {"session", API_STRING, 1, 0, CAIRN_LABEL_MAX, NULL,
     "The session's id; the episode's id is episode-<session>."},
    {"task", API_STRING, 1, 0, 0, NULL, "What the session was for."},
    {"outcome", API_STRING, 1, 0, 0, "success|partial|failure", "How it ended."},
    {"timestamp", API_TIME, 0, 0, 0, NULL, "When: ISO 8601 or ms since the epoch (default now)."},
    {"decisions", API_OBJECTS, 0, 0, 0, NULL,
     "Decisions: {type (design, implementation, test, recovery or routing), context, "
     "chosen, rationale, outcome (success, partial or failure), effects[]}."},
    {"events", API_OBJECTS, 0, 0, 0, NULL,
     "Events: {type (tool_call, commit, error, milestone, test or handoff), content, "
     "caused_by[], leads_to[]}."},
    {"metrics", API_OBJECT, 0, 0, 0, NULL,
     "{duration_minutes, tool_calls, errors, recoveries, commits, files_changed}."},
    {"lessons", API_STRINGS, 0, 0, 0, NULL, "What was learned."},
    {"force", API_BOOLEAN, 0, 0, 0, NULL,
     "Replace the session's episode if it exists (the old one stays in the log)."},
    END};

static int episode_new(api_call *c)
{
    cJSON *ep = cJSON_Duplicate(c->args, 1);
    cairn_reflex *r;
    char *text, *stored = NULL, *notes = NULL;
    int rc, force = cairn__api_bool(c, "force", 0);

    if (ep == NULL)
        return cairn__api_fail(c, CAIRN_ENOMEM, "out of memory");
    cJSON_DeleteItemFromObjectCaseSensitive(ep, "force");
    for (cJSON *v = ep->child, *next; v != NULL; v = next) { /* null: as if absent */
        next = v->next;
        if (cJSON_IsNull(v))
            cJSON_Delete(cJSON_DetachItemViaPointer(ep, v));
    }
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(ep, "timestamp"))) {
        char t[40];
        cairn__iso_time((int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ep, "timestamp")),
                        t, sizeof t);
        cJSON_ReplaceItemInObjectCaseSensitive(ep, "timestamp", cJSON_CreateString(t));
    }
    text = cJSON_PrintUnformatted(ep);
    cJSON_Delete(ep);
    if (text == NULL)
        return cairn__api_fail(c, CAIRN_ENOMEM, "out of memory");
    if ((rc = cairn__api_reflex(c, &r)) == CAIRN_OK &&
        (rc = cairn_episode_put_noted(r, text, strlen(text), force, &stored, &notes)) != CAIRN_OK)
        rc = rc == CAIRN_EEXIST ? cairn__api_fail(c, rc, "session %.64s has an episode already "
                                                         "(force: true replaces it)",
                                                  cairn__api_str(c, "session", ""))
                                : fail_rx(c, rc);
    free(text);
    if (rc == CAIRN_OK && notes != NULL) /* what the put dropped or defaulted; */
        (void)add_text(c, "notes", notes); /* stored all the same if this fails */
    else
        free(notes);
    return rc == CAIRN_OK ? add_text(c, "episode", stored) : (free(stored), rc);
}

static const api_param episode_get_params[] = {
    {"session", API_STRING, 1, 0, CAIRN_LABEL_MAX, NULL,
     "The session's id (episode-<session> is accepted too)."},
    END};

static int episode_get(api_call *c)
{
    const char *sid = cairn__api_str(c, "session", "");
    cairn_reflex *r;
    char *text = NULL;
    int rc;

    if ((rc = cairn__api_reflex(c, &r)) != CAIRN_OK)
        return rc;
    if ((rc = cairn_episode_get(r, sid, &text)) != CAIRN_OK)
        return rc == CAIRN_ENOTFOUND ? cairn__api_fail(c, rc, "no episode for session %.64s", sid)
                                     : fail_rx(c, rc);
    return add_text(c, "episode", text);
}

static const api_param episode_list_params[] = {
    {"outcome", API_STRING, 0, 0, 0, "success|partial|failure", "Only episodes of this outcome."},
    {"since", API_TIME, 0, 0, 0, NULL, "Only episodes at or after this time."},
    {"max_results", API_INTEGER, 0, 1, 100, NULL, "1-100 (default 20), newest first."},
    END};

static int episode_list(api_call *c)
{
    cairn_episode_query q = CAIRN_EPISODE_QUERY_INIT;
    cairn_reflex *r;
    char *text = NULL;
    int rc;

    q.outcome = cairn__api_str(c, "outcome", NULL);
    q.max_results = (unsigned)cairn__api_num(c, "max_results", 20);
    if ((rc = cairn__api_time(c, "since", &q.since_ms)) != CAIRN_OK ||
        (rc = cairn__api_reflex(c, &r)) != CAIRN_OK)
        return rc;
    if ((rc = cairn_episode_list(r, &q, &text)) != CAIRN_OK)
        return fail_rx(c, rc);
    return add_text(c, "episodes", text);
}

/* ---- the causal graph ------------------------------------------------------------- */

static const api_param node_params[] = {
    {"type", API_STRING, 1, 0, 0,
     "decision|event|outcome|pattern|error|tool_call|commit|milestone|test|handoff",
     "What the node stands for."},
    {"label", API_STRING, 1, 0, CAIRN_LABEL_MAX, NULL,
     "Its text; a node with the same label is the same node (its frequency goes up)."},
    A_EPISODE,
    END};

static int causal_node(api_call *c)
{
    cairn_causal_node n;
    cairn_reflex *r;
    unsigned type = 0;
    int rc;

    (void)cairn_node_type_parse(cairn__api_str(c, "type", ""), &type); /* checked: an enum */
    memset(&n, 0, sizeof n);
    if ((rc = cairn__api_reflex(c, &r)) != CAIRN_OK)
        return rc;
    if ((rc = cairn_causal_add_node(r, type, cairn__api_str(c, "label", ""),
                                    cairn__api_str(c, "episode", NULL), &n)) != CAIRN_OK)
        return fail_rx(c, rc);
    cJSON_AddItemToObject(c->out, "node", cairn__json_node(&n));
    cairn_causal_node_clear(&n);
    return CAIRN_OK;
}

/* A node argument: its id ("n" and 16 hex digits) or its exact label. */
static int node_ref(api_call *c, cairn_reflex *r, const char *arg, char *id)
{
    const char *v = cairn__api_str(c, arg, "");
    cairn_causal_node n;
    size_t len = strlen(v);
    int rc;

    if (len == CAIRN_NODE_ID_MAX && v[0] == 'n' && strspn(v + 1, "0123456789abcdef") == 16) {
        memcpy(id, v, len + 1);
        return CAIRN_OK;
    }
    if ((rc = cairn_causal_node_id(r, v, id)) != CAIRN_OK)
        return fail_rx(c, rc);
    memset(&n, 0, sizeof n);
    if ((rc = cairn_causal_get_node(r, id, &n)) != CAIRN_OK)
        return cairn__api_fail(c, rc, "%s: no node with id or label \"%.64s\"", arg, v);
    cairn_causal_node_clear(&n);
    return CAIRN_OK;
}

static const api_param edge_params[] = {
    {"source", API_STRING, 1, 0, CAIRN_LABEL_MAX, NULL,
     "The cause: a node's id (as causal_node returned it) or its exact label."},
    {"target", API_STRING, 1, 0, CAIRN_LABEL_MAX, NULL, "The effect: a node's id or exact label."},
    {"type", API_STRING, 1, 0, 0, "causes|enables|prevents|correlates", "How they relate."},
    {"weight", API_NUMBER, 0, 0, 1, NULL,
     "Strength 0 to 1 (default 0.5); a repeated edge keeps the running average."},
    A_EPISODE,
    END};

static int causal_edge(api_call *c)
{
    char src[CAIRN_NODE_ID_MAX + 1], dst[CAIRN_NODE_ID_MAX + 1];
    cairn_causal_edge e;
    cairn_reflex *r;
    unsigned type = 0;
    int rc;

    (void)cairn_edge_type_parse(cairn__api_str(c, "type", ""), &type);
    memset(&e, 0, sizeof e);
    if ((rc = cairn__api_reflex(c, &r)) != CAIRN_OK || (rc = node_ref(c, r, "source", src)) ||
        (rc = node_ref(c, r, "target", dst)))
        return rc;
    if ((rc = cairn_causal_add_edge(r, src, dst, type, cairn__api_num(c, "weight", 0.5),
                                    cairn__api_str(c, "episode", NULL), &e)) != CAIRN_OK)
        return fail_rx(c, rc);
    cJSON_AddItemToObject(c->out, "edge", cairn__json_edge(&e));
    cairn_causal_edge_clear(&e);
    return CAIRN_OK;
}

static const api_param path_params[] = {
    {"from_label", API_STRING, 1, 0, CAIRN_LABEL_MAX, NULL,
     "Text in the first node's label (case-insensitive)."},
    {"to_label", API_STRING, 1, 0, CAIRN_LABEL_MAX, NULL, "Text in the last node's label."},
    {"max_depth", API_INTEGER, 0, 1, 10, NULL, "At most this many edges (default 5)."},
    END};

static int causal_path(api_call *c)
{
    cairn_causal_path p;
    cairn_reflex *r;
    cJSON *arr;
    int rc;

    memset(&p, 0, sizeof p);
    if ((rc = cairn__api_reflex(c, &r)) != CAIRN_OK)
        return rc;
    if ((rc = cairn_causal_path_find(r, cairn__api_str(c, "from_label", ""),
                                     cairn__api_str(c, "to_label", ""),
                                     (unsigned)cairn__api_num(c, "max_depth", 5), &p)) != CAIRN_OK)
        return fail_rx(c, rc);
    cJSON_AddBoolToObject(c->out, "found", p.found);
    arr = cJSON_AddArrayToObject(c->out, "path");
    for (size_t i = 0; p.found && i < p.n; i++)
        cJSON_AddItemToArray(arr, cairn__json_node(&p.path[i]));
    if (p.found)
        cJSON_AddNumberToObject(c->out, "depth", p.depth);
    else
        cJSON_AddStringToObject(c->out, "reason", p.error); /* not found is no error */
    cairn_causal_path_clear(&p);
    return CAIRN_OK;
}

static const api_param no_params[] = {END};

static int causal_status(api_call *c)
{
    cairn_reflex_status st;
    cairn_reflex *r;
    int rc;

    if ((rc = cairn__api_reflex(c, &r)) != CAIRN_OK)
        return rc;
    if ((rc = cairn_reflex_status_get(r, &st)) != CAIRN_OK)
        return fail_rx(c, rc);
    cairn__json_add_int(c->out, "episodes", (int64_t)st.episodes);
    cairn__json_add_int(c->out, "nodes", (int64_t)st.nodes);
    cairn__json_add_int(c->out, "edges", (int64_t)st.edges);
    cairn__json_add_int(c->out, "patterns", (int64_t)st.patterns);
    cairn__json_add_int(c->out, "processed", (int64_t)st.processed);
    if (st.updated_ms != 0)
        cairn__json_add_time(c->out, "updated", st.updated_ms);
    else
        cJSON_AddNullToObject(c->out, "updated");
    return CAIRN_OK;
}

/* ---- patterns ------------------------------------------------------------------ */

static const api_param pattern_add_params[] = {
    {"name", API_STRING, 1, 0, CAIRN_LABEL_MAX, NULL,
     "The pattern's name; the same name again counts one more occurrence."},
    {"trigger", API_STRING, 1, 0, CAIRN_LABEL_MAX, NULL, "When it applies."},
    {"action", API_STRING, 1, 0, CAIRN_LABEL_MAX, NULL, "What to do then."},
    {"description", API_STRING, 0, 0, CAIRN_LABEL_MAX, NULL, "More words about it."},
    {"success_rate", API_NUMBER, 0, 0, 1, NULL,
     "How well it worked this time, 0 to 1 (default 1); the pattern keeps the running average."},
    A_EPISODE,
    END};

static int pattern_add(api_call *c)
{
    cairn_pattern_spec ps = CAIRN_PATTERN_SPEC_INIT;
    cairn_pattern p;
    cairn_reflex *r;
    int rc;

    memset(&p, 0, sizeof p);
    ps.name = cairn__api_str(c, "name", "");
    ps.trigger = cairn__api_str(c, "trigger", "");
    ps.action = cairn__api_str(c, "action", "");
    ps.description = cairn__api_str(c, "description", NULL);
    ps.success_rate = cairn__api_num(c, "success_rate", 1.0);
    ps.episode = cairn__api_str(c, "episode", NULL);
    if ((rc = cairn__api_reflex(c, &r)) != CAIRN_OK)
        return rc;
    if ((rc = cairn_pattern_add(r, &ps, &p)) != CAIRN_OK)
        return fail_rx(c, rc);
    cJSON_AddItemToObject(c->out, "pattern", cairn__json_pattern(&p));
    cairn_pattern_clear(&p);
    return CAIRN_OK;
}

static const api_param pattern_list_params[] = {
    {"min_success_rate", API_NUMBER, 0, 0, 1, NULL, "0 to 1 (default 0)."},
    {"min_occurrences", API_INTEGER, 0, 1, 1000, NULL, "1 to 1000 (default 1)."},
    END};

static const api_param pattern_anti_params[] = {
    {"max_success_rate", API_NUMBER, 0, 0, 1, NULL, "0 to 1 (default 0.3)."},
    END};

static int patterns_out(api_call *c, int rc, cairn_pattern *p, size_t n)
{
    cJSON *arr;
    if (rc != CAIRN_OK)
        return fail_rx(c, rc);
    arr = cJSON_AddArrayToObject(c->out, "patterns");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, cairn__json_pattern(&p[i]));
    cairn__json_add_int(c->out, "count", (int64_t)n);
    cairn_patterns_free(p, n);
    return CAIRN_OK;
}

static int pattern_list(api_call *c)
{
    cairn_pattern *p = NULL;
    cairn_reflex *r;
    size_t n = 0;
    int rc;

    if ((rc = cairn__api_reflex(c, &r)) != CAIRN_OK)
        return rc;
    rc = cairn_pattern_list(r, cairn__api_num(c, "min_success_rate", 0),
                            (uint64_t)cairn__api_num(c, "min_occurrences", 1), &p, &n);
    return patterns_out(c, rc, p, n);
}

static int pattern_anti(api_call *c)
{
    cairn_pattern *p = NULL;
    cairn_reflex *r;
    size_t n = 0;
    int rc;

    if ((rc = cairn__api_reflex(c, &r)) != CAIRN_OK)
        return rc;
    rc = cairn_pattern_anti(r, cairn__api_num(c, "max_success_rate", 0.3), &p, &n);
    return patterns_out(c, rc, p, n);
}

/* ---- the table ------------------------------------------------------------------- */

const api_tool cairn__api_reflex_tools[] = {
    {"episode_new", "Record an episode",
     "Store what a session did: its task, outcome, decisions, events, metrics and lessons, "
     "for later reflection.",
     episode_new_params, episode_new, 0},
    {"episode_get", "Get an episode", "The episode of a session.", episode_get_params,
     episode_get, API_READ_ONLY},
    {"episode_list", "List episodes", "Episodes, newest first, by outcome and time.",
     episode_list_params, episode_list, API_READ_ONLY},
    {"causal_node", "Add a causal node",
     "Add a node (decision, event, outcome, error, ...) to the causal graph, or count one "
     "more sighting of the node with that label.",
     node_params, causal_node, 0},
    {"causal_edge", "Add a causal edge",
     "Say that one node causes, enables, prevents or correlates with another.", edge_params,
     causal_edge, 0},
    {"causal_path", "Find a causal path",
     "The shortest chain of causes from one node to another (breadth-first, by label text).",
     path_params, causal_path, API_READ_ONLY},
    {"causal_status", "Causal graph status",
     "How many episodes, nodes, edges and patterns the graph holds.", no_params, causal_status,
     API_READ_ONLY},
    {"pattern_add", "Add a pattern",
     "Record a pattern (when X, do Y) and how well it worked; repeated names accumulate.",
     pattern_add_params, pattern_add, 0},
    {"pattern_list", "List patterns",
     "Patterns by success rate, best first; min_success_rate keeps those that worked.",
     pattern_list_params,
     pattern_list, API_READ_ONLY},
    {"pattern_anti", "List anti-patterns",
     "Patterns seen at least twice that mostly failed, worst first.", pattern_anti_params,
     pattern_anti, API_READ_ONLY},
    {NULL, NULL, NULL, NULL, NULL, 0}};
