/*
 * api_log.c - the log tools: append an event, and read records back as
 * `cairn dump` prints them ({seq, ts, type, ns, payload}).
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "render.h"
#include "civil.h"

#define END {NULL, 0, 0, 0, 0, NULL, NULL}
#define LOG_QUERY_DEFAULT 100

static const api_param append_params[] = {
    {"payload", API_ANY, 1, 0, 0, NULL,
     "The event: any JSON value (usually an object), stored as given."},
    {"namespace", API_STRING, 0, 0, CAIRN_NS_MAX, NULL, "Namespace of the record (default \"\")."},
    {"type", API_STRING, 0, 0, 64, NULL,
     "Record type: a name the engine knows (default event), a number 1-65535, or a name of "
     "your own (tool_call): registered in the store at its first use."},
    END};

static int fail_db(api_call *c, int rc)
{
    return cairn__api_fail_msg(c, rc, cairn_errmsg(c->s->db));
}

/* The type argument: the engine's name or a number, or a name of the
 * store's (register: appending registers a new one; a query looks it up). */
static int parse_type(api_call *c, uint16_t *type, int register_new)
{
    const char *t = cairn__api_str(c, "type", NULL);
    int rc;
    if (t == NULL || cairn_record_type_parse(t, type) == CAIRN_OK)
        return CAIRN_OK;
    rc = register_new ? cairn_type_register(c->s->db, t, type) : cairn_type_lookup(c->s->db, t, type);
    return rc == CAIRN_OK ? CAIRN_OK : fail_db(c, rc);
}

static int log_append(api_call *c)
{
    cairn_entry e = {0};
    uint16_t type = CAIRN_REC_EVENT;
    uint64_t seq = 0;
    char *payload;
    int rc;

    if ((rc = parse_type(c, &type, 1)) != CAIRN_OK)
        return rc;
    /* the value as given: null is a payload too */
    if ((payload = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(c->args, "payload"))) ==
        NULL)
        return cairn__api_fail(c, CAIRN_ENOMEM, "out of memory");
    e.type = type;
    e.ns = cairn__api_str(c, "namespace", "");
    e.ns_len = strlen(e.ns);
    e.json = payload;
    e.json_len = strlen(payload);
    rc = cairn_append(c->s->db, &e, &seq);
    if (rc == CAIRN_OK)
        rc = cairn_flush(c->s->db); /* visible to other processes when the call returns */
    free(payload);
    if (rc != CAIRN_OK)
        return fail_db(c, rc);
    cairn__json_add_int(c->out, "seq", (int64_t)seq);
    return CAIRN_OK;
}

static const api_param query_params[] = {
    {"since", API_TIME, 0, 0, 0, NULL, "Records committed at or after this time."},
    {"until", API_TIME, 0, 0, 0, NULL, "Records committed at or before this time."},
    {"from_seq", API_INTEGER, 0, 1, 9007199254740992.0, NULL,
     "Records with sequence number >= this (to page on: next_seq of the last answer)."},
    {"to_seq", API_INTEGER, 0, 1, 9007199254740992.0, NULL, "Records with sequence number <= this."},
    {"type", API_STRING, 0, 0, 64, NULL, "Only records of this type (a name or a number)."},
    {"namespace", API_STRING, 0, 0, CAIRN_NS_MAX, NULL, "Only records of this namespace."},
    {"limit", API_INTEGER, 0, 1, 1000, NULL, "At most this many, oldest first (default 100)."},
    END};

static cJSON *record_json(cairn_db *db, const cairn_record *r)
{
    cJSON *o = cJSON_CreateObject(), *p;
    char t[40], tn[CAIRN_TYPE_NAME_MAX + 1], *ns = malloc(r->ns_len + 1);

    cairn__json_add_int(o, "seq", (int64_t)r->seq);
    cairn__iso_time(r->ts_ms, t, sizeof t);
    cJSON_AddStringToObject(o, "ts", t);
    if (cairn_type_name(db, r->type, tn, sizeof tn))
        cJSON_AddStringToObject(o, "type", tn);
    else
        cJSON_AddNumberToObject(o, "type", r->type);
    if (ns != NULL) {
        memcpy(ns, r->ns, r->ns_len);
        ns[r->ns_len] = 0;
        cJSON_AddStringToObject(o, "ns", ns);
        free(ns);
    }
    if ((p = cJSON_ParseWithLength(r->json, r->json_len)) != NULL) {
        cJSON_AddItemToObject(o, "payload", p);
    } else { /* any bytes the C API stored: as text, never dropped */
        char *s = malloc(r->json_len + 1);
        if (s != NULL) {
            memcpy(s, r->json, r->json_len);
            s[r->json_len] = 0;
            cJSON_AddStringToObject(o, "payload_text", s);
            free(s);
        }
    }
    return o;
}

static int log_query(api_call *c)
{
    cairn_range range = CAIRN_RANGE_INIT;
    const char *ns = cairn__api_str(c, "namespace", NULL);
    size_t limit = (size_t)cairn__api_num(c, "limit", LOG_QUERY_DEFAULT), n = 0;
    uint16_t type = 0;
    cairn_iter *it = NULL;
    cairn_record rec;
    cJSON *arr;
    int rc;

    range.seq_from = (uint64_t)cairn__api_num(c, "from_seq", 0);
    range.seq_to = cairn__api_arg(c, "to_seq") ? (uint64_t)cairn__api_num(c, "to_seq", 0)
                                                : UINT64_MAX;
    if ((rc = cairn__api_time(c, "since", &range.ts_from)) != CAIRN_OK ||
        (rc = cairn__api_time(c, "until", &range.ts_to)) != CAIRN_OK)
        return rc;
    if (cairn__api_arg(c, "type") != NULL) {
        if ((rc = parse_type(c, &type, 0)) != CAIRN_OK)
            return rc;
        range.type = type;
    }
    if ((rc = cairn_iter_open(c->s->db, &range, &it)) != CAIRN_OK)
        return fail_db(c, rc);
    arr = cJSON_AddArrayToObject(c->out, "records");
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        if (ns != NULL && (rec.ns_len != strlen(ns) || memcmp(rec.ns, ns, rec.ns_len) != 0))
            continue;
        if (n == limit) { /* one more: say where the next page starts */
            cairn__json_add_int(c->out, "next_seq", (int64_t)rec.seq);
            break;
        }
        cJSON_AddItemToArray(arr, record_json(c->s->db, &rec));
        n++;
    }
    cairn_iter_close(it);
    if (rc != CAIRN_OK && rc != CAIRN_ENOTFOUND)
        return fail_db(c, rc);
    if (rc == CAIRN_ENOTFOUND)
        cJSON_AddNullToObject(c->out, "next_seq");
    cairn__json_add_int(c->out, "count", (int64_t)n);
    return CAIRN_OK;
}

const api_tool cairn__api_log_tools[] = {
    {"log_append", "Log an event",
     "Append one event (any JSON) to the store's log, for audits and replay. Returns its "
     "sequence number.",
     append_params, log_append, 0},
    {"log_query", "Read the log",
     "Records of the log, oldest first, by time, sequence number, type and namespace; pages "
     "through next_seq.",
     query_params, log_query, API_READ_ONLY},
    {NULL, NULL, NULL, NULL, NULL, 0}};
