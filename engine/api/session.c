/*
 * session.c - cairn_session_*: open a store with its memories (and, at the
 * first call that needs it, its reflexion state), run tool calls one at a
 * time, and turn every outcome into a JSON object the caller frees.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "utf8.h"

/* ---- errors ------------------------------------------------------------------ */

int cairn__api_fail(api_call *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
    return code;
}

int cairn__api_fail_msg(api_call *c, int code, const char *handle_msg)
{
    if (handle_msg != NULL && handle_msg[0] != 0)
        return cairn__api_fail(c, code, "%s", handle_msg);
    return cairn__api_fail(c, code, "%s", cairn_strerror(code));
}

/* A message echoes what a caller sent (an argument's name, a value cut at
 * 64 bytes): make it one line of valid UTF-8, byte for byte in place. */
static void one_clean_line(char *m)
{
    size_t n = strlen(m);
    for (size_t i = 0; i < n;) {
        size_t k = cairn__utf8_seq((const unsigned char *)m + i, n - i);
        if (k == 0 || (unsigned char)m[i] < 0x20 || m[i] == 0x7f) {
            m[i++] = k == 0 ? '?' : ' ';
            continue;
        }
        i += k;
    }
}

/* {"error": {"code": "CAIRN_EXXX", "status": -N, "message": "..."}} */
static char *error_json(int code, const char *msg)
{
    const char *s = cairn_strerror(code);
    char name[32];
    size_t n = strcspn(s, ":");
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    char clean[CAIRN_ERRMSG_MAX], *text;

    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), s);
    cJSON_AddStringToObject(e, "code", name);
    cJSON_AddNumberToObject(e, "status", code);

    snprintf(clean, sizeof clean, "%s", msg && msg[0] ? msg : s + (s[n] ? n + 2 : n));
    one_clean_line(clean);
    cJSON_AddStringToObject(e, "message", clean);
    text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

static int give_error(char **out, int code, const char *msg)
{
    if (out != NULL)
        *out = error_json(code, msg);
    return code;
}

void cairn_free(void *p)
{
    free(p);
}

/* ---- arguments --------------------------------------------------------------- */

const cJSON *cairn__api_arg(const api_call *c, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->args, name);
    return cJSON_IsNull(v) ? NULL : v;
}

const char *cairn__api_str(const api_call *c, const char *name, const char *def)
{
    const cJSON *v = cairn__api_arg(c, name);
    return cJSON_IsString(v) ? v->valuestring : def;
}

double cairn__api_num(const api_call *c, const char *name, double def)
{
    const cJSON *v = cairn__api_arg(c, name);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

int cairn__api_bool(const api_call *c, const char *name, int def)
{
    const cJSON *v = cairn__api_arg(c, name);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

/* Defined with the episodes (ISO 8601 date-time or date). */
int cairn__rx_parse_time(const char *s, size_t len, int64_t *ms);

int cairn__api_time(api_call *c, const char *name, int64_t *out)
{
    const cJSON *v = cairn__api_arg(c, name);
    if (v == NULL)
        return CAIRN_OK;
    if (cJSON_IsNumber(v)) {
        *out = (int64_t)v->valuedouble;
        return CAIRN_OK;
    }
    if (cairn__rx_parse_time(v->valuestring, strlen(v->valuestring), out) != CAIRN_OK)
        return cairn__api_fail(c, CAIRN_EINVAL,
                               "%s: \"%.64s\" is not an ISO 8601 time (2026-11-22T05:04:45Z)",
                               name, v->valuestring);
    return CAIRN_OK;
}

int cairn__api_strs(api_call *c, const char *name, const char ***out, size_t *n)
{
    const cJSON *v = cairn__api_arg(c, name), *e;
    size_t i = 0;

    *out = NULL;
    *n = 0;
    if (v == NULL)
        return CAIRN_OK;
    if ((*out = malloc(sizeof **out * (size_t)(cJSON_IsArray(v) ? cJSON_GetArraySize(v) + 1 : 1))) ==
        NULL)
        return cairn__api_fail(c, CAIRN_ENOMEM, "out of memory");
    if (cJSON_IsString(v)) {
        (*out)[i++] = v->valuestring;
    } else {
        cJSON_ArrayForEach(e, v)
            (*out)[i++] = e->valuestring;
    }
    *n = i;
    return CAIRN_OK;
}

int cairn__api_reflex(api_call *c, cairn_reflex **out)
{
    cairn_session *s = c->s;
    int rc;
    if (s->rx == NULL && (rc = cairn_reflex_open(s->db, &s->rx)) != CAIRN_OK)
        return cairn__api_fail_msg(c, rc, cairn_errmsg(s->db));
    *out = s->rx;
    return CAIRN_OK;
}

/* ---- the embedder -------------------------------------------------------------- */

static void drop_embedder(cairn_session *s)
{
    if (s->emb_builtin)
        cairn_hash_embedder_free(&s->emb);
    memset(&s->emb, 0, sizeof s->emb);
    s->emb_builtin = 0;
}

/* Give the session's embedder to one memory handle (none: lexical only). */
static int attach(cairn_session *s, cairn_mem *m)
{
    return cairn_mem_set_embedder(m, s->emb.dim ? &s->emb : NULL);
}

static int use_builtin(cairn_session *s, uint32_t dim)
{
    int rc;
    drop_embedder(s);
    if ((rc = cairn_hash_embedder(&s->emb, dim)) != CAIRN_OK)
        return rc;
    s->emb_builtin = 1;
    return CAIRN_OK;
}

int cairn_session_set_embedder(cairn_session *s, const char *name, uint32_t dim,
                               double min_similarity, cairn_embed_fn fn, void *user,
                               char **error_json)
{
    char msg[CAIRN_ERRMSG_MAX] = "";
    int rc = CAIRN_OK;

    if (error_json != NULL)
        *error_json = NULL;
    if (s == NULL)
        return give_error(error_json, CAIRN_EINVAL, "no session");
    if (fn != NULL && (name == NULL || name[0] == 0 || strlen(name) > CAIRN_EMBEDDER_NAME_MAX ||
                       dim == 0 || dim > 65536))
        return give_error(error_json, CAIRN_EINVAL,
                          "an embedder needs a name of 1-63 bytes and a dimension of 1-65536");
    pthread_mutex_lock(&s->mu);
    if (fn == NULL) {
        drop_embedder(s);
    } else {
        cairn_embedder e = {0};
        e.name = name; /* copied by cairn_mem_set_embedder's check only */
        e.dim = dim;
        e.user = user;
        e.embed = fn;
        e.min_similarity = min_similarity;
        if ((rc = cairn_mem_set_embedder(s->mem, &e)) != CAIRN_OK) {
            snprintf(msg, sizeof msg, "%s", cairn_mem_errmsg(s->mem));
            (void)attach(s, s->mem); /* keep the one it had */
        } else {
            drop_embedder(s);
            snprintf(s->emb_name, sizeof s->emb_name, "%s", name);
            e.name = s->emb_name;
            s->emb = e;
        }
    }
    if (rc == CAIRN_OK && (rc = attach(s, s->mem)) == CAIRN_OK && s->search != NULL &&
        attach(s, s->search) != CAIRN_OK) {
        /* memory_search's handle could not follow: it reopens at its next
         * use, with this embedder */
        cairn_mem_close(s->search);
        s->search = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    return rc == CAIRN_OK ? CAIRN_OK : give_error(error_json, rc, msg);
}

/* ---- open, close ------------------------------------------------------------- */

typedef struct session_opts {
    int create, read_only;
    uint32_t busy_timeout_ms;
    const char *embedder;
} session_opts;

static int parse_options(const char *text, cJSON **doc, session_opts *o, char *msg, size_t cap)
{
    const cJSON *v;
    o->create = 1;
    o->read_only = 0;
    o->busy_timeout_ms = 0;
    o->embedder = "auto";
    *doc = NULL;
    if (text == NULL)
        return CAIRN_OK;
    if ((*doc = cJSON_Parse(text)) == NULL || !cJSON_IsObject(*doc)) {
        snprintf(msg, cap, "options: must be a JSON object");
        return CAIRN_EINVAL;
    }
    cJSON_ArrayForEach(v, *doc) {
        const char *k = v->string;
        if (strcmp(k, "create") == 0 && cJSON_IsBool(v)) {
            o->create = cJSON_IsTrue(v);
        } else if (strcmp(k, "read_only") == 0 && cJSON_IsBool(v)) {
            o->read_only = cJSON_IsTrue(v);
        } else if (strcmp(k, "busy_timeout_ms") == 0 && cJSON_IsNumber(v) &&
                   v->valuedouble >= 0 && v->valuedouble <= 86400000.0) {
            o->busy_timeout_ms = (uint32_t)v->valuedouble;
        } else if (strcmp(k, "embedder") == 0 && cJSON_IsString(v) &&
                   (strcmp(v->valuestring, "auto") == 0 ||
                    strcmp(v->valuestring, "builtin") == 0 ||
                    strcmp(v->valuestring, "none") == 0)) {
            o->embedder = v->valuestring;
        } else {
            snprintf(msg, cap,
                     "options: \"%.64s\" is not one of create (bool), read_only (bool), "
                     "busy_timeout_ms (0-86400000), embedder (auto, builtin, none)",
                     k);
            return CAIRN_EINVAL;
        }
    }
    return CAIRN_OK;
}

/* The embedder the options ask for: "auto" takes the built-in one (of
 * their dimension) when the store's vectors are its own, else none;
 * "builtin" takes it whatever the store holds (a store of another
 * embedder's vectors refuses it, and the open fails saying so). */
static int pick_embedder(cairn_session *s, const char *how)
{
    char sname[CAIRN_EMBEDDER_NAME_MAX + 1];
    cairn_embedder probe;
    uint32_t sdim = 0;
    int rc, builtin_vectors;

    if (strcmp(how, "none") == 0)
        return CAIRN_OK;
    cairn_mem_vectors(s->mem, sname, &sdim, NULL);
    if (strcmp(how, "auto") == 0 && sdim == 0)
        return CAIRN_OK;
    if ((rc = cairn_hash_embedder(&probe, 0)) != CAIRN_OK)
        return rc;
    builtin_vectors = sdim != 0 && strcmp(sname, probe.name) == 0;
    cairn_hash_embedder_free(&probe);
    if (strcmp(how, "auto") == 0 && !builtin_vectors)
        return CAIRN_OK; /* another embedder's vectors: lexical until one is set */
    if ((rc = use_builtin(s, builtin_vectors ? sdim : 0)) != CAIRN_OK)
        return rc;
    return attach(s, s->mem);
}

int cairn_session_open(cairn_session **out, const char *path, const char *options_json,
                       char **error_json)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char msg[CAIRN_ERRMSG_MAX] = "";
    cairn_session *s;
    session_opts so;
    cJSON *doc;
    int rc;

    if (error_json != NULL)
        *error_json = NULL;
    if (out == NULL)
        return give_error(error_json, CAIRN_EINVAL, "no place for the session");
    *out = NULL;
    if (path == NULL || path[0] == 0)
        return give_error(error_json, CAIRN_EINVAL, "no store path");
    if ((rc = parse_options(options_json, &doc, &so, msg, sizeof msg)) != CAIRN_OK) {
        cJSON_Delete(doc);
        return give_error(error_json, rc, msg);
    }
    if ((s = calloc(1, sizeof *s)) == NULL || (s->path = strdup(path)) == NULL) {
        free(s);
        cJSON_Delete(doc);
        return give_error(error_json, CAIRN_ENOMEM, NULL);
    }
    pthread_mutex_init(&s->mu, NULL);
    s->read_only = so.read_only;
    o.read_only = so.read_only;
    o.create = so.create && !so.read_only;
    o.busy_timeout_ms = so.busy_timeout_ms;
    rc = cairn_open(&s->db, path, &o, msg, sizeof msg);
    if (rc == CAIRN_OK && (rc = cairn_mem_open(s->db, NULL, &s->mem)) != CAIRN_OK)
        snprintf(msg, sizeof msg, "%s", cairn_errmsg(s->db));
    if (rc == CAIRN_OK && (rc = pick_embedder(s, so.embedder)) != CAIRN_OK)
        snprintf(msg, sizeof msg, "the embedder: %s", cairn_mem_errmsg(s->mem));
    cJSON_Delete(doc);
    if (rc != CAIRN_OK) {
        cairn_session_close(s);
        return give_error(error_json, rc, msg);
    }
    *out = s;
    return CAIRN_OK;
}

int cairn_session_close(cairn_session *s)
{
    int rc;
    if (s == NULL)
        return CAIRN_OK;
    cairn_reflex_close(s->rx);
    cairn_mem_close(s->search);
    cairn_mem_close(s->mem);
    drop_embedder(s);
    rc = cairn_close(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s->path);
    free(s);
    return rc;
}

/* ---- calls ------------------------------------------------------------------- */

int cairn_session_call(cairn_session *s, const char *name, const char *args_json,
                       char **result_json)
{
    api_call c;
    cJSON *args;
    int rc;

    if (result_json == NULL)
        return CAIRN_EINVAL;
    *result_json = NULL;
    if (s == NULL || name == NULL)
        return give_error(result_json, CAIRN_EINVAL, "no session or no tool name");
    memset(&c, 0, sizeof c);
    c.s = s;
    if ((c.tool = cairn__api_find(name)) == NULL) {
        snprintf(c.msg, sizeof c.msg, "no tool named \"%.64s\"", name);
        return give_error(result_json, CAIRN_ENOTFOUND, c.msg);
    }
    args = args_json ? cJSON_Parse(args_json) : cJSON_CreateObject();
    if (args == NULL)
        return give_error(result_json, CAIRN_EINVAL, "the arguments are not valid JSON");
    if (args_json != NULL) { /* the rule for text: what is stored or echoed reads back */
        cairn__err e;
        if (cairn__utf8_check_json(&e, "arguments: ", NULL, args_json, strlen(args_json)) !=
            CAIRN_OK) {
            cJSON_Delete(args);
            return give_error(result_json, CAIRN_EINVAL, e.msg);
        }
    }
    if ((rc = cairn__api_check(&c, c.tool, args)) != CAIRN_OK) {
        cJSON_Delete(args);
        return give_error(result_json, rc, c.msg);
    }
    if ((c.out = cJSON_CreateObject()) == NULL) {
        cJSON_Delete(args);
        return give_error(result_json, CAIRN_ENOMEM, NULL);
    }
    c.args = args;
    pthread_mutex_lock(&s->mu);
    rc = c.tool->run(&c);
    pthread_mutex_unlock(&s->mu);
    if (rc == CAIRN_OK && (*result_json = cJSON_PrintUnformatted(c.out)) == NULL)
        rc = cairn__api_fail(&c, CAIRN_ENOMEM, "out of memory");
    if (rc != CAIRN_OK)
        give_error(result_json, rc, c.msg);
    cJSON_Delete(c.out);
    cJSON_Delete(args);
    return rc;
}
