/*
 * schema.c - the tool tables as JSON Schemas (cairn_session_tools), and
 * the check of a call's arguments against the same tables.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

static const api_tool *const parts[] = {cairn__api_mem_tools, cairn__api_log_tools,
                                        cairn__api_reflex_tools, cairn__api_tier_tools};

const api_tool *cairn__api_find(const char *name)
{
    for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++)
        for (const api_tool *t = parts[p]; t->name != NULL; t++)
            if (strcmp(t->name, name) == 0)
                return t;
    return NULL;
}

/* ---- JSON Schema of a parameter ---------------------------------------- */

static const char *type_name(api_type t)
{
    switch (t) {
    case API_STRING: return "string";
    case API_INTEGER: return "integer";
    case API_NUMBER: return "number";
    case API_BOOLEAN: return "boolean";
    case API_OBJECT: return "object";
    case API_STRINGS:
    case API_OBJECTS: return "array";
    default: return NULL;
    }
}

static cJSON *param_schema(const api_param *p)
{
    cJSON *o = cJSON_CreateObject();
    const char *tn = type_name(p->type);

    if (o == NULL)
        return NULL;
    if (tn != NULL) {
        cJSON_AddStringToObject(o, "type", tn);
    } else if (p->type == API_TIME) {
        const char *both[] = {"string", "integer"};
        cJSON_AddItemToObject(o, "type", cJSON_CreateStringArray(both, 2));
    } else if (p->type == API_STRING_OR_STRINGS) {
        const char *both[] = {"string", "array"};
        cJSON_AddItemToObject(o, "type", cJSON_CreateStringArray(both, 2));
        cJSON_AddItemToObject(o, "items", cJSON_CreateObject());
        cJSON_AddStringToObject(cJSON_GetObjectItem(o, "items"), "type", "string");
    }
    if (p->type == API_STRINGS || p->type == API_OBJECTS) {
        cJSON *it = cJSON_AddObjectToObject(o, "items");
        cJSON_AddStringToObject(it, "type", p->type == API_STRINGS ? "string" : "object");
    }
    if (p->type == API_STRING && p->max > 0) {
        char d[512];
        snprintf(d, sizeof d, "%s (at most %g bytes)", p->description, p->max);
        cJSON_AddStringToObject(o, "description", d);
    } else {
        cJSON_AddStringToObject(o, "description", p->description);
    }
    if (p->choices != NULL) {
        cJSON *e = cJSON_AddArrayToObject(o, "enum");
        const char *s = p->choices;
        while (*s) {
            size_t n = strcspn(s, "|");
            char buf[64];
            snprintf(buf, sizeof buf, "%.*s", (int)n, s);
            cJSON_AddItemToArray(e, cJSON_CreateString(buf));
            s += n + (s[n] == '|');
        }
    }
    if ((p->type == API_INTEGER || p->type == API_NUMBER) && (p->min != 0 || p->max != 0)) {
        cJSON_AddNumberToObject(o, "minimum", p->min);
        cJSON_AddNumberToObject(o, "maximum", p->max);
    }
    /* No maxLength: JSON Schema counts characters, the check bytes (a
     * 500-character CJK query is 1500 bytes); the description says. */
    return o;
}

static cJSON *tool_json(const api_tool *t)
{
    cJSON *o = cJSON_CreateObject(), *schema, *props, *req, *ann;

    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "title", t->title);
    cJSON_AddStringToObject(o, "description", t->description);
    schema = cJSON_AddObjectToObject(o, "inputSchema");
    cJSON_AddStringToObject(schema, "type", "object");
    props = cJSON_AddObjectToObject(schema, "properties");
    req = cJSON_CreateArray();
    for (const api_param *p = t->params; p && p->name; p++) {
        cJSON_AddItemToObject(props, p->name, param_schema(p));
        if (p->required)
            cJSON_AddItemToArray(req, cJSON_CreateString(p->name));
    }
    if (cJSON_GetArraySize(req) > 0)
        cJSON_AddItemToObject(schema, "required", req);
    else
        cJSON_Delete(req);
    cJSON_AddFalseToObject(schema, "additionalProperties");
    ann = cJSON_AddObjectToObject(o, "annotations");
    cJSON_AddBoolToObject(ann, "readOnlyHint", (t->hints & API_READ_ONLY) != 0);
    if (!(t->hints & API_READ_ONLY)) {
        cJSON_AddBoolToObject(ann, "destructiveHint", (t->hints & API_DESTRUCTIVE) != 0);
        cJSON_AddBoolToObject(ann, "idempotentHint", (t->hints & API_IDEMPOTENT) != 0);
    }
    cJSON_AddFalseToObject(ann, "openWorldHint");
    return o;
}

static char *tools_text;
static pthread_once_t tools_once = PTHREAD_ONCE_INIT;

static void build_tools(void)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t p = 0; arr && p < sizeof parts / sizeof parts[0]; p++)
        for (const api_tool *t = parts[p]; t->name != NULL; t++)
            cJSON_AddItemToArray(arr, tool_json(t));
    tools_text = arr ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(arr);
}

const char *cairn_session_tools(void)
{
    pthread_once(&tools_once, build_tools);
    return tools_text ? tools_text : "[]";
}

/* ---- checking a call's arguments ---------------------------------------- */

static int is_integer(const cJSON *v)
{
    double d = v->valuedouble;
    return cJSON_IsNumber(v) && isfinite(d) && d == floor(d) && fabs(d) <= 9007199254740992.0;
}

static int all_of(const cJSON *arr, int (*is)(const cJSON *))
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
        if (!is(e))
            return 0;
    return 1;
}

static int is_string(const cJSON *v) { return cJSON_IsString(v); }
static int is_object(const cJSON *v) { return cJSON_IsObject(v); }

static int check_one(api_call *c, const api_param *p, const cJSON *v)
{
    const char *want = NULL;

    switch (p->type) {
    case API_STRING:
        if (!cJSON_IsString(v))
            want = "a string";
        break;
    case API_INTEGER:
        if (!is_integer(v))
            want = "an integer";
        break;
    case API_NUMBER:
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
            want = "a number";
        break;
    case API_BOOLEAN:
        if (!cJSON_IsBool(v))
            want = "true or false";
        break;
    case API_OBJECT:
        if (!cJSON_IsObject(v))
            want = "an object";
        break;
    case API_ANY:
        break;
    case API_STRINGS:
        if (!cJSON_IsArray(v) || !all_of(v, is_string))
            want = "an array of strings";
        break;
    case API_OBJECTS:
        if (!cJSON_IsArray(v) || !all_of(v, is_object))
            want = "an array of objects";
        break;
    case API_TIME:
        if (!cJSON_IsString(v) && !is_integer(v))
            want = "a time: ISO 8601 text (2026-11-22T05:04:45Z) or ms since the epoch";
        break;
    case API_STRING_OR_STRINGS:
        if (!cJSON_IsString(v) && !(cJSON_IsArray(v) && all_of(v, is_string)))
            want = "a string or an array of strings";
        break;
    }
    if (want != NULL)
        return cairn__api_fail(c, CAIRN_EINVAL, "%s: must be %s", p->name, want);
    if ((p->type == API_INTEGER || p->type == API_NUMBER) && (p->min != 0 || p->max != 0) &&
        (v->valuedouble < p->min || v->valuedouble > p->max))
        return cairn__api_fail(c, CAIRN_EINVAL, "%s: must be %s from %g to %g, not %g", p->name,
                               p->type == API_INTEGER ? "an integer" : "a number", p->min, p->max,
                               v->valuedouble);
    if (p->type == API_STRING && p->max > 0 && strlen(v->valuestring) > (size_t)p->max)
        return cairn__api_fail(c, CAIRN_EINVAL, "%s: at most %g bytes", p->name, p->max);
    if (p->type == API_STRING && p->choices != NULL) {
        size_t n = strlen(v->valuestring);
        for (const char *s = p->choices; *s;) {
            size_t k = strcspn(s, "|");
            if (k == n && memcmp(s, v->valuestring, n) == 0)
                return CAIRN_OK;
            s += k + (s[k] == '|');
        }
        return cairn__api_fail(c, CAIRN_EINVAL, "%s: must be one of %s, not \"%.64s\"", p->name,
                               p->choices, v->valuestring);
    }
    return CAIRN_OK;
}

int cairn__api_check(api_call *c, const api_tool *t, const cJSON *args)
{
    const cJSON *v;
    int rc;

    if (!cJSON_IsObject(args))
        return cairn__api_fail(c, CAIRN_EINVAL, "the arguments must be a JSON object");
    cJSON_ArrayForEach(v, args) {
        const api_param *p = t->params;
        while (p && p->name && strcmp(p->name, v->string) != 0)
            p++;
        if (p == NULL || p->name == NULL)
            return cairn__api_fail(c, CAIRN_EINVAL, "unknown argument \"%.64s\" for %s",
                                   v->string, t->name);
        if (cJSON_IsNull(v) && (!p->required || p->type == API_ANY))
            continue; /* null: as if absent (or, for any JSON value, the value null) */
        if ((rc = check_one(c, p, v)) != CAIRN_OK)
            return rc;
    }
    for (const api_param *p = t->params; p && p->name; p++) {
        v = cJSON_GetObjectItemCaseSensitive(args, p->name);
        if (p->required && (v == NULL || (cJSON_IsNull(v) && p->type != API_ANY)))
            return cairn__api_fail(c, CAIRN_EINVAL, "missing required argument \"%s\" for %s",
                                   p->name, t->name);
    }
    return CAIRN_OK;
}
