/*
 * api.h - the tool interface (cairn_session_*) inside: the session, the
 * tables that describe each tool, and the helpers every tool uses.
 *
 * A tool is a row of a table: its name, what it does, its parameters and
 * the function that runs it. The same rows give cairn_session_tools() its
 * JSON Schemas and check every call's arguments before the function runs,
 * so a tool's code reads arguments that have the declared types and
 * ranges and never re-checks them.
 */
#ifndef CAIRN_API_H
#define CAIRN_API_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdint.h>

#include "cairn.h"

struct cairn_session {
    pthread_mutex_t mu;   /* calls take turns */
    cairn_db *db;
    cairn_mem *mem;       /* recall's ranking */
    cairn_mem *search;    /* relevance alone, for memory_search; opened at first use */
    cairn_reflex *rx;     /* opened at first use */
    int read_only;
    char *path;
    cairn_embedder emb;   /* emb.dim 0: none */
    int emb_builtin;      /* emb is cairn_hash_embedder's (freed at close) */
    char emb_name[CAIRN_EMBEDDER_NAME_MAX + 1];
};

/* The JSON type of a parameter. */
typedef enum api_type {
    API_STRING,
    API_INTEGER,
    API_NUMBER,
    API_BOOLEAN,
    API_OBJECT,
    API_ANY,        /* any JSON value */
    API_STRINGS,    /* an array of strings */
    API_OBJECTS,    /* an array of objects */
    API_TIME,       /* ISO 8601 text or ms since the epoch */
    API_STRING_OR_STRINGS
} api_type;

typedef struct api_param {
    const char *name;        /* NULL ends a table */
    api_type type;
    int required;
    double min, max;         /* numbers: the inclusive range (both 0: none);
                                strings: max = the longest, in bytes */
    const char *choices;     /* strings: "a|b|c" (NULL: any) */
    const char *description;
} api_param;

typedef struct api_call api_call;

/* Hints for clients (MCP tool annotations). */
#define API_READ_ONLY 1u     /* changes nothing in the store */
#define API_DESTRUCTIVE 2u   /* may remove what a user wants to keep */
#define API_IDEMPOTENT 4u    /* a second identical call changes nothing more */

typedef struct api_tool {
    const char *name, *title, *description;
    const api_param *params;
    int (*run)(api_call *c);
    unsigned hints;
} api_tool;

/* One call: what the tool reads and fills. Lives on the caller's stack, so
 * its message is the call's own (no error state per handle). */
struct api_call {
    cairn_session *s;
    const api_tool *tool;
    const cJSON *args;       /* an object, checked against tool->params */
    cJSON *out;              /* the result object the tool fills */
    char msg[CAIRN_ERRMSG_MAX];
};

/* The tool tables of each part, each ending with a NULL name. */
extern const api_tool cairn__api_mem_tools[];
extern const api_tool cairn__api_reflex_tools[];
extern const api_tool cairn__api_log_tools[];
extern const api_tool cairn__api_tier_tools[];

/* The tool named name, NULL if none. */
const api_tool *cairn__api_find(const char *name);
/* Check args (an object) against t's parameters: CAIRN_OK, or
 * CAIRN_EINVAL with c->msg naming the argument. */
int cairn__api_check(api_call *c, const api_tool *t, const cJSON *args);

/* ---- failing ---- */
/* Set c->msg from fmt and return code. */
int cairn__api_fail(api_call *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The message a handle left (cairn_mem_errmsg, ...), else the code's. */
int cairn__api_fail_msg(api_call *c, int code, const char *handle_msg);

/* ---- arguments (present and of the checked type, else the default) ---- */
const cJSON *cairn__api_arg(const api_call *c, const char *name);
const char *cairn__api_str(const api_call *c, const char *name, const char *def);
double cairn__api_num(const api_call *c, const char *name, double def);
int cairn__api_bool(const api_call *c, const char *name, int def);
/* A time argument into *out (untouched when absent): CAIRN_OK, or
 * CAIRN_EINVAL with c->msg (text that is not ISO 8601). */
int cairn__api_time(api_call *c, const char *name, int64_t *out);
/* A string or an array of strings as a malloc'd array of borrowed
 * pointers (*out NULL and *n 0 when absent). CAIRN_OK or CAIRN_ENOMEM. */
int cairn__api_strs(api_call *c, const char *name, const char ***out, size_t *n);

/* ---- results (the objects themselves: render.h) ---- */
/* The lazily opened reflexion handle; CAIRN_OK or its open's error in c. */
int cairn__api_reflex(api_call *c, cairn_reflex **out);

#endif /* CAIRN_API_H */
