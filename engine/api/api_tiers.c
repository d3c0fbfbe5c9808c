/*
 * api_tiers.c - the cognitive tiers as tools: the memory stream (add,
 * list by cycle, search), core memory (show, set, append, remove),
 * archival memory (insert, search), reflections and the tiers' statistics,
 * over cairn_stream_*, cairn_core_*, cairn_archival_*, cairn_reflection_add
 * and cairn_tiers_stats. Parameters are snake_case as every tool's; the
 * entries returned keep the field names of the tier functions.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"

#define END {NULL, 0, 0, 0, 0, NULL, NULL}
#define CYCLE_MAX 9007199254740992.0

#define SCOPE_PARAM                                                                  \
    {"scope", API_STRING, 0, 0, CAIRN_SCOPE_MAX, NULL,                               \
     "global (default), org:NAME or repo:OWNER/NAME; searches in a repo also see its " \
     "org and global"}

static int fail_mem(api_call *c, int rc)
{
    return cairn__api_fail_msg(c, rc, cairn_mem_errmsg(c->s->mem));
}

/* The JSON text a tier function returned, parsed into c->out under name
 * (or merged into c->out when name is NULL); frees text. */
static int put(api_call *c, const char *name, char *text)
{
    cJSON *v = text ? cJSON_Parse(text) : NULL;
    cairn_free(text);
    if (v == NULL)
        return cairn__api_fail(c, CAIRN_ENOMEM, "out of memory");
    if (name != NULL) {
        cJSON_AddItemToObject(c->out, name, v);
    } else {
        cJSON *x;
        while ((x = v->child) != NULL)
            cJSON_AddItemToObject(c->out, x->string, cJSON_DetachItemViaPointer(v, x));
        cJSON_Delete(v);
    }
    return CAIRN_OK;
}

/* Copy argument `from` of the call into o as `to`, if given. */
static void copy_arg(const api_call *c, cJSON *o, const char *from, const char *to)
{
    const cJSON *v = cairn__api_arg(c, from);
    if (v != NULL)
        cJSON_AddItemToObject(o, to, cJSON_Duplicate(v, 1));
}

/* ---- stream ---------------------------------------------------------------------- */

static const api_param stream_add_params[] = {
    {"content", API_STRING, 1, 0, 1u << 20, NULL, "What happened."},
    {"cycle", API_INTEGER, 1, 0, CYCLE_MAX, NULL, "The cycle it happened in."},
    {"role", API_STRING, 1, 0, 64, NULL, "The role that acted."},
    {"action", API_STRING, 0, 0, 800, NULL, "A line saying what was done (default: the content's first line)."},
    {"type", API_STRING, 0, 0, 16, "action|observation|decision", "What kind of entry (default action)."},
    {"importance", API_INTEGER, 0, 1, 10, NULL, "1 to 10 (default 5)."},
    {"tags", API_STRINGS, 0, 0, 0, NULL, "Tags to file it under."},
    {"issue_refs", API_ANY, 0, 0, 0, NULL, "Issue numbers it refers to (an array of integers)."},
    {"pr_refs", API_ANY, 0, 0, 0, NULL, "Pull request numbers it refers to (an array of integers)."},
    SCOPE_PARAM,
    END};

static int stream_add(api_call *c)
{
    cJSON *e = cJSON_CreateObject();
    char *in, *out = NULL;
    int rc;
    copy_arg(c, e, "content", "content");
    copy_arg(c, e, "cycle", "cycle");
    copy_arg(c, e, "role", "role");
    copy_arg(c, e, "action", "action");
    copy_arg(c, e, "type", "type");
    copy_arg(c, e, "importance", "importance");
    copy_arg(c, e, "tags", "tags");
    copy_arg(c, e, "issue_refs", "issueRefs");
    copy_arg(c, e, "pr_refs", "prRefs");
    in = cJSON_PrintUnformatted(e);
    cJSON_Delete(e);
    if (in == NULL)
        return cairn__api_fail(c, CAIRN_ENOMEM, "out of memory");
    rc = cairn_stream_add(c->s->mem, cairn__api_str(c, "scope", NULL), in, &out);
    free(in);
    return rc != CAIRN_OK ? fail_mem(c, rc) : put(c, NULL, out);
}

static const api_param stream_list_params[] = {
    {"cycle_from", API_INTEGER, 1, 0, CYCLE_MAX, NULL, "The first cycle."},
    {"cycle_to", API_INTEGER, 1, 0, CYCLE_MAX, NULL, "The last cycle (not below cycle_from)."},
    {"role", API_STRING, 0, 0, 64, NULL, "Only this role's entries."},
    {"min_importance", API_INTEGER, 0, 1, 10, NULL, "Only entries this important or more."},
    {"limit", API_INTEGER, 0, 1, 100000, NULL, "The first N (default: all)."},
    SCOPE_PARAM,
    {"only_scope", API_BOOLEAN, 0, 0, 0, NULL, "The scope alone, not the wider ones."},
    END};

static const api_param stream_search_params[] = {
    {"query", API_STRING, 1, 0, 65536, NULL, "What to look for."},
    {"role", API_STRING, 0, 0, 64, NULL, "Only this role's entries."},
    {"issue", API_INTEGER, 0, 1, CYCLE_MAX, NULL, "Only entries referring to this issue."},
    {"min_importance", API_INTEGER, 0, 1, 10, NULL, "Only entries this important or more."},
    {"cycle_from", API_INTEGER, 0, 0, CYCLE_MAX, NULL, "Only cycles from this one (with cycle_to)."},
    {"cycle_to", API_INTEGER, 0, 0, CYCLE_MAX, NULL, "Only cycles up to this one (with cycle_from)."},
    {"limit", API_INTEGER, 0, 1, 1000, NULL, "How many (default 5)."},
    SCOPE_PARAM,
    {"only_scope", API_BOOLEAN, 0, 0, 0, NULL, "The scope alone, not the wider ones."},
    END};

static int stream_query(api_call *c, int search)
{
    cairn_stream_query q = CAIRN_STREAM_QUERY_INIT;
    char *out = NULL;
    int rc;
    q.scope = cairn__api_str(c, "scope", NULL);
    q.only_scope = cairn__api_bool(c, "only_scope", 0);
    q.role = cairn__api_str(c, "role", NULL);
    q.issue = (int64_t)cairn__api_num(c, "issue", 0);
    q.min_importance = (int)cairn__api_num(c, "min_importance", 0);
    q.limit = (size_t)cairn__api_num(c, "limit", 0);
    if ((cairn__api_arg(c, "cycle_from") != NULL) != (cairn__api_arg(c, "cycle_to") != NULL))
        return cairn__api_fail(c, CAIRN_EQUERY, "cycle_from and cycle_to: both or neither");
    if (cairn__api_arg(c, "cycle_from") != NULL) {
        q.has_cycles = 1;
        q.cycle_from = (int64_t)cairn__api_num(c, "cycle_from", 0);
        q.cycle_to = (int64_t)cairn__api_num(c, "cycle_to", 0);
    }
    rc = search ? cairn_stream_search(c->s->mem, cairn__api_str(c, "query", ""), &q, &out)
                : cairn_stream_list(c->s->mem, &q, &out);
    return rc != CAIRN_OK ? fail_mem(c, rc) : put(c, "entries", out);
}

static int stream_list(api_call *c)
{
    return stream_query(c, 0);
}

static int stream_search(api_call *c)
{
    return stream_query(c, 1);
}

/* ---- core ---------------------------------------------------------------------------- */

#define SECTIONS "sprint|roleState|threads|recentlyShipped|blockers|lessons"

static const api_param core_show_params[] = {
    {"section", API_STRING, 0, 0, 32, SECTIONS, "One section (default: all)."},
    SCOPE_PARAM,
    END};

static const api_param core_set_params[] = {
    {"section", API_STRING, 1, 0, 32, "sprint|roleState", "The section to replace."},
    {"value", API_STRING, 1, 0, 65536, NULL, "The new value: JSON text or plain text."},
    {"role", API_STRING, 0, 0, 64, NULL, "The role (roleState only, required there)."},
    SCOPE_PARAM,
    END};

static const api_param core_append_params[] = {
    {"section", API_STRING, 1, 0, 32, "threads|recentlyShipped|blockers|lessons", "The section."},
    {"value", API_STRING, 1, 0, 65536, NULL, "The item: JSON text or plain text."},
    SCOPE_PARAM,
    END};

static const api_param core_remove_params[] = {
    {"section", API_STRING, 1, 0, 32, "threads|recentlyShipped|blockers|lessons", "The section."},
    {"item_id", API_STRING, 1, 0, CAIRN_MEM_ID_MAX, NULL, "The item's id."},
    SCOPE_PARAM,
    END};

static int core_show(api_call *c)
{
    char *out = NULL;
    int rc = cairn_core_show(c->s->mem, cairn__api_str(c, "scope", NULL),
                             cairn__api_str(c, "section", NULL), &out);
    return rc != CAIRN_OK ? fail_mem(c, rc) : put(c, NULL, out);
}

static int core_set(api_call *c)
{
    char *out = NULL;
    int rc = cairn_core_set(c->s->mem, cairn__api_str(c, "scope", NULL),
                            cairn__api_str(c, "section", ""), cairn__api_str(c, "role", NULL),
                            cairn__api_str(c, "value", ""), &out);
    return rc != CAIRN_OK ? fail_mem(c, rc) : put(c, NULL, out);
}

static int core_append(api_call *c)
{
    char *out = NULL;
    int rc = cairn_core_append(c->s->mem, cairn__api_str(c, "scope", NULL),
                               cairn__api_str(c, "section", ""), cairn__api_str(c, "value", ""), &out);
    return rc != CAIRN_OK ? fail_mem(c, rc) : put(c, NULL, out);
}

static int core_remove(api_call *c)
{
    char *out = NULL;
    int rc = cairn_core_remove(c->s->mem, cairn__api_str(c, "scope", NULL),
                               cairn__api_str(c, "section", ""), cairn__api_str(c, "item_id", ""),
                               &out);
    return rc != CAIRN_OK ? fail_mem(c, rc) : put(c, NULL, out);
}

/* ---- archival, reflections, stats --------------------------------------------------------- */

static const api_param archival_insert_params[] = {
    {"content", API_STRING, 1, 0, 1u << 20, NULL, "The document."},
    {"type", API_STRING, 0, 0, 64, NULL, "What it is (default document)."},
    {"source", API_STRING, 0, 0, 4096, NULL, "Where it comes from."},
    {"date", API_STRING, 0, 0, 40, NULL, "Its date: YYYY-MM-DD or ISO 8601 UTC."},
    {"tags", API_STRINGS, 0, 0, 0, NULL, "Tags to file it under."},
    {"wait", API_BOOLEAN, 0, 0, 0, NULL,
     "Embed before storing (default false: stored at once, embedded in the background)."},
    SCOPE_PARAM,
    END};

static const api_param archival_search_params[] = {
    {"query", API_STRING, 1, 0, 65536, NULL, "What to look for."},
    {"type", API_STRING, 0, 0, 64, NULL, "Only entries of this type."},
    {"since", API_TIME, 0, 0, 0, NULL, "Only entries dated at or after this time."},
    {"until", API_TIME, 0, 0, 0, NULL, "Only entries dated at or before this time."},
    {"limit", API_INTEGER, 0, 1, 1000, NULL, "How many (default 5)."},
    SCOPE_PARAM,
    {"only_scope", API_BOOLEAN, 0, 0, 0, NULL, "The scope alone, not the wider ones."},
    END};

static const api_param reflection_add_params[] = {
    {"content", API_STRING, 1, 0, 1u << 20, NULL, "What was learned."},
    {"cycle", API_INTEGER, 1, 0, CYCLE_MAX, NULL, "The cycle reflected on."},
    {"role", API_STRING, 0, 0, 64, NULL, "The role reflecting."},
    {"outcome", API_STRING, 0, 0, 64, NULL, "success, failure, partial..."},
    {"what_worked", API_STRING, 0, 0, 65536, NULL, "What worked."},
    SCOPE_PARAM,
    END};

static const api_param stats_params[] = {SCOPE_PARAM, END};

static int archival_insert(api_call *c)
{
    cJSON *m = cJSON_CreateObject();
    char *in, *out = NULL;
    int rc;
    copy_arg(c, m, "type", "type");
    copy_arg(c, m, "source", "source");
    copy_arg(c, m, "date", "date");
    copy_arg(c, m, "tags", "tags");
    in = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    if (in == NULL)
        return cairn__api_fail(c, CAIRN_ENOMEM, "out of memory");
    rc = cairn_archival_insert(c->s->mem, cairn__api_str(c, "scope", NULL),
                               cairn__api_str(c, "content", ""), in,
                               cairn__api_bool(c, "wait", 0) ? CAIRN_ARCHIVAL_WAIT : 0, &out);
    free(in);
    return rc != CAIRN_OK ? fail_mem(c, rc) : put(c, NULL, out);
}

static int archival_search(api_call *c)
{
    cairn_archival_query q = CAIRN_ARCHIVAL_QUERY_INIT;
    char *out = NULL;
    int rc;
    q.scope = cairn__api_str(c, "scope", NULL);
    q.only_scope = cairn__api_bool(c, "only_scope", 0);
    q.type = cairn__api_str(c, "type", NULL);
    q.limit = (size_t)cairn__api_num(c, "limit", 0);
    if ((rc = cairn__api_time(c, "since", &q.since)) != CAIRN_OK ||
        (rc = cairn__api_time(c, "until", &q.until)) != CAIRN_OK)
        return rc;
    rc = cairn_archival_search(c->s->mem, cairn__api_str(c, "query", ""), &q, &out);
    return rc != CAIRN_OK ? fail_mem(c, rc) : put(c, "entries", out);
}

static int reflection_add(api_call *c)
{
    cJSON *r = cJSON_CreateObject();
    char *in, *out = NULL;
    int rc;
    copy_arg(c, r, "content", "content");
    copy_arg(c, r, "cycle", "cycle");
    copy_arg(c, r, "role", "role");
    copy_arg(c, r, "outcome", "outcome");
    copy_arg(c, r, "what_worked", "whatWorked");
    in = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    if (in == NULL)
        return cairn__api_fail(c, CAIRN_ENOMEM, "out of memory");
    rc = cairn_reflection_add(c->s->mem, cairn__api_str(c, "scope", NULL), in, &out);
    free(in);
    return rc != CAIRN_OK ? fail_mem(c, rc) : put(c, NULL, out);
}

static int tiers_stats(api_call *c)
{
    char *out = NULL;
    int rc = cairn_tiers_stats(c->s->mem, cairn__api_str(c, "scope", NULL), &out);
    return rc != CAIRN_OK ? fail_mem(c, rc) : put(c, NULL, out);
}

/* ---- the table ---------------------------------------------------------------------- */

const api_tool cairn__api_tier_tools[] = {
    {"stream_add", "Log to the memory stream",
     "Record what a role did, observed or decided in a cycle, with an importance of 1-10; "
     "says when a reflection is due.",
     stream_add_params, stream_add, 0},
    {"stream_list", "Stream entries by cycle",
     "Every stream entry of a cycle range, by cycle (a range with no cycle is an error naming "
     "the cycles there are).",
     stream_list_params, stream_list, API_READ_ONLY},
    {"stream_search", "Search the memory stream",
     "The stream entries that best match a query, with role, issue, importance and cycle "
     "filters.",
     stream_search_params, stream_search, 0},
    {"core_show", "Show core memory",
     "The core memory sections (sprint, roleState, threads, recentlyShipped, blockers, "
     "lessons) with their token use.",
     core_show_params, core_show, API_READ_ONLY},
    {"core_set", "Replace a core section",
     "Replace sprint, or one role's roleState, with a new value.", core_set_params, core_set,
     API_IDEMPOTENT},
    {"core_append", "Append to a core section",
     "Add an item to threads, recentlyShipped (the last 10 kept), blockers or lessons.",
     core_append_params, core_append, API_IDEMPOTENT},
    {"core_remove", "Remove a core item", "Remove an item of an appendable core section by id.",
     core_remove_params, core_remove, API_DESTRUCTIVE | API_IDEMPOTENT},
    {"archival_insert", "Archive a document",
     "Keep a document for later search; it is embedded in the background unless wait is true.",
     archival_insert_params, archival_insert, 0},
    {"archival_search", "Search archival memory",
     "The archived documents that best match a query, by type and date.",
     archival_search_params, archival_search, 0},
    {"reflection_add", "Record a reflection",
     "Record what was learned in a cycle; the importance since the last reflection starts again.",
     reflection_add_params, reflection_add, 0},
    {"tiers_stats", "Memory tier statistics",
     "Stream entries and cycles, archival entries, core token use, and whether a reflection "
     "is due.",
     stats_params, tiers_stats, API_READ_ONLY},
    {NULL, NULL, NULL, NULL, NULL, 0}};
