/*
 * episode.c - episodes: validate and normalise (ReflexionMemory's shapes), store
 * as an `episode` record, get (read the newest record by its seq), list,
 * decision sequence; and the public face of the session-log extractor.
 *
 * The fold keeps only (id, outcome, timestamp, seq) per episode; the body
 * is read back from the log on demand, in O(log n) by seq.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "civil.h"
#include "extract.h"
#include "rstate.h"
#include "store.h"
#include "utf8.h"

/* ---- time ---- */

static int digits(const char *s, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

int cairn__rx_parse_time(const char *s, size_t len, int64_t *ms)
{
    int y, mo, d, h = 0, mi = 0, sec = 0, frac = 0, fd = 0;
    int64_t off = 0;
    size_t i = 10;

    if (len < 10 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
        !digits(s + 8, 2, &d) || mo < 1 || mo > 12 || d < 1 || d > 31)
        return CAIRN_EINVAL;
    if (len > 10) {
        if ((s[10] != 'T' && s[10] != ' ') || len < 16 || !digits(s + 11, 2, &h) || s[13] != ':' ||
            !digits(s + 14, 2, &mi) || h > 23 || mi > 59)
            return CAIRN_EINVAL;
        i = 16;
        if (i < len && s[i] == ':') {
            if (len < 19 || !digits(s + 17, 2, &sec) || sec > 60)
                return CAIRN_EINVAL;
            i = 19;
            if (i < len && s[i] == '.') {
                for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++)
                    if (fd < 3) {
                        frac = frac * 10 + (s[i] - '0');
                        fd++;
                    }
                while (fd > 0 && fd < 3) {
                    frac *= 10;
                    fd++;
                }
            }
        }
        if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
            i++;
        } else if (i < len && (s[i] == '+' || s[i] == '-')) {
            int oh, om;
            if (len - i < 6 || !digits(s + i + 1, 2, &oh) || s[i + 3] != ':' ||
                !digits(s + i + 4, 2, &om) || oh > 23 || om > 59)
                return CAIRN_EINVAL;
            off = (s[i] == '+' ? 1 : -1) * ((int64_t)oh * 3600 + om * 60);
            i += 6;
        }
    }
    if (i != len)
        return CAIRN_EINVAL;
    *ms = ((cairn__days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 +
            sec) - off) * 1000 + frac;
    return CAIRN_OK;
}

static void iso_of(int64_t ms, char *out, size_t cap)
{
    time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- validation ---- */

static const char *const decision_types[] = {"design", "implementation", "test", "recovery",
                                             "routing", NULL};
static const char *const event_types[] = {"tool_call", "commit", "error", "milestone", "test",
                                          "handoff", NULL};
static const char *const metric_names[] = {"duration_minutes", "tool_calls", "errors",
                                           "recoveries", "commits", "files_changed", NULL};

static int one_of(const char *s, const char *const *set)
{
    for (; *set != NULL; set++)
        if (strcmp(s, *set) == 0)
            return 1;
    return 0;
}

static int bad(cairn_reflex *r, const char *where, const char *why)
{
    return cairn__rx_fail(r, CAIRN_EINVAL, "%s: %s", where, why);
}

/* o[key] must be a string (optional: absent is set to def); non-empty if
 * required. */
static int want_str(cairn_reflex *r, cJSON *o, const char *key, const char *where,
                    const char *def, int required)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    char w[96];
    snprintf(w, sizeof w, "%s%s", where, key);
    if (cJSON_IsNull(v) && !required) { /* null: unknown, as absent */
        cJSON_DeleteItemFromObjectCaseSensitive(o, key);
        v = NULL;
    }
    if (v == NULL) {
        if (required)
            return bad(r, w, "required");
        return cJSON_AddStringToObject(o, key, def) ? CAIRN_OK : CAIRN_ENOMEM;
    }
    if (!cJSON_IsString(v))
        return bad(r, w, "must be a string");
    if (required && v->valuestring[0] == 0)
        return bad(r, w, "must not be empty");
    if (strlen(v->valuestring) > 65536)
        return bad(r, w, "longer than 64 KiB");
    return CAIRN_OK;
}

static int want_strs(cairn_reflex *r, cJSON *o, const char *key, const char *where)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key), *x;
    char w[96];
    int i = 0;
    snprintf(w, sizeof w, "%s%s", where, key);
    if (cJSON_IsNull(v)) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, key);
        v = NULL;
    }
    if (v == NULL)
        return cJSON_AddArrayToObject(o, key) ? CAIRN_OK : CAIRN_ENOMEM;
    if (!cJSON_IsArray(v))
        return bad(r, w, "must be an array of strings");
    cJSON_ArrayForEach(x, v) {
        if (!cJSON_IsString(x)) {
            char wi[112];
            snprintf(wi, sizeof wi, "%s[%d]", w, i);
            return bad(r, wi, "must be a string");
        }
        i++;
    }
    return CAIRN_OK;
}

static int want_time(cairn_reflex *r, cJSON *o, const char *where, const char *def)
{
    int rc = want_str(r, o, "timestamp", where, def, 0);
    int64_t ms;
    const char *s;
    char w[96];
    if (rc != CAIRN_OK)
        return rc;
    s = cJSON_GetObjectItemCaseSensitive(o, "timestamp")->valuestring;
    snprintf(w, sizeof w, "%stimestamp", where);
    if (cairn__rx_parse_time(s, strlen(s), &ms) != CAIRN_OK)
        return bad(r, w, "must be an ISO 8601 date-time (2026-01-01T17:05:00Z)");
    return CAIRN_OK;
}

static int check_decision(cairn_reflex *r, cJSON *d, int i, const char *def_ts)
{
    char where[48];
    const char *t;
    int rc;
    snprintf(where, sizeof where, "decisions[%d].", i);
    if (!cJSON_IsObject(d))
        return bad(r, where, "must be an object");
    char id[16];
    snprintf(id, sizeof id, "d%03d", i + 1 < 1000 ? i + 1 : 999);
    if ((rc = want_str(r, d, "id", where, id, 0)) != CAIRN_OK ||
        (rc = want_time(r, d, where, def_ts)) != CAIRN_OK ||
        (rc = want_str(r, d, "type", where, "implementation", 0)) != CAIRN_OK ||
        (rc = want_str(r, d, "context", where, "", 0)) != CAIRN_OK ||
        (rc = want_str(r, d, "chosen", where, "", 1)) != CAIRN_OK ||
        (rc = want_str(r, d, "rationale", where, "", 0)) != CAIRN_OK ||
        (rc = want_str(r, d, "outcome", where, "success", 0)) != CAIRN_OK ||
        (rc = want_strs(r, d, "effects", where)) != CAIRN_OK)
        return rc;
    t = cJSON_GetObjectItemCaseSensitive(d, "type")->valuestring;
    if (!one_of(t, decision_types)) {
        char w[64];
        snprintf(w, sizeof w, "%stype", where);
        return bad(r, w, "must be design, implementation, test, recovery or routing");
    }
    t = cJSON_GetObjectItemCaseSensitive(d, "outcome")->valuestring;
    if (cairn__rx_outcome(t, strlen(t)) < 0) {
        char w[64];
        snprintf(w, sizeof w, "%soutcome", where);
        return bad(r, w, "must be success, partial or failure");
    }
    return CAIRN_OK;
}

static int check_event(cairn_reflex *r, cJSON *d, int i, const char *def_ts)
{
    char where[48], id[16];
    int rc;
    snprintf(where, sizeof where, "events[%d].", i);
    if (!cJSON_IsObject(d))
        return bad(r, where, "must be an object");
    snprintf(id, sizeof id, "e%03d", i + 1 < 1000 ? i + 1 : 999);
    if ((rc = want_str(r, d, "id", where, id, 0)) != CAIRN_OK ||
        (rc = want_time(r, d, where, def_ts)) != CAIRN_OK ||
        (rc = want_str(r, d, "type", where, "milestone", 0)) != CAIRN_OK ||
        (rc = want_str(r, d, "content", where, "", 1)) != CAIRN_OK ||
        (rc = want_strs(r, d, "caused_by", where)) != CAIRN_OK ||
        (rc = want_strs(r, d, "leads_to", where)) != CAIRN_OK)
        return rc;
    if (!one_of(cJSON_GetObjectItemCaseSensitive(d, "type")->valuestring, event_types)) {
        char w[64];
        snprintf(w, sizeof w, "%stype", where);
        return bad(r, w, "must be tool_call, commit, error, milestone, test or handoff");
    }
    return CAIRN_OK;
}

/* Add a note of what the put changed ("events[3]: ...; dropped"). */
static int note(cJSON *notes, const char *what)
{
    cJSON *s;
    if (notes == NULL)
        return CAIRN_OK;
    if ((s = cJSON_CreateString(what)) == NULL || !cJSON_AddItemToArray(notes, s)) {
        cJSON_Delete(s);
        return CAIRN_ENOMEM;
    }
    return CAIRN_OK;
}

/* Each item of o[key] checked and defaulted; one that cannot be used (not
 * an object, a type the schema does not know, no content or no choice) is
 * dropped and noted, and the episode kept. */
static int check_list(cairn_reflex *r, cJSON *o, const char *key, const char *def_ts,
                      int (*each)(cairn_reflex *, cJSON *, int, const char *), cJSON *notes)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key), *x, *next;
    int i = 0, rc;
    if (v == NULL)
        return cJSON_AddArrayToObject(o, key) ? CAIRN_OK : CAIRN_ENOMEM;
    if (!cJSON_IsArray(v))
        return bad(r, key, "must be an array");
    for (x = v->child; x != NULL; x = next, i++) {
        next = x->next;
        if ((rc = each(r, x, i, def_ts)) == CAIRN_ENOMEM)
            return rc;
        if (rc != CAIRN_OK) {
            char w[CAIRN_ERRMSG_MAX + 16];
            snprintf(w, sizeof w, "%s; dropped", cairn__errbuf(r));
            cairn__errbuf(r)[0] = 0;
            if ((rc = note(notes, w)) != CAIRN_OK)
                return rc;
            cJSON_Delete(cJSON_DetachItemViaPointer(v, x));
        }
    }
    return CAIRN_OK;
}

static int check_metrics(cairn_reflex *r, cJSON *o)
{
    cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "metrics");
    if (cJSON_IsNull(m)) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, "metrics");
        m = NULL;
    }
    if (m == NULL && (m = cJSON_AddObjectToObject(o, "metrics")) == NULL)
        return CAIRN_ENOMEM;
    if (!cJSON_IsObject(m))
        return bad(r, "metrics", "must be an object");
    for (int i = 0; metric_names[i] != NULL; i++) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(m, metric_names[i]);
        char w[48];
        snprintf(w, sizeof w, "metrics.%s", metric_names[i]);
        if (cJSON_IsNull(v)) { /* the agent project writes null for unknown: 0 */
            cJSON_DeleteItemFromObjectCaseSensitive(m, metric_names[i]);
            v = NULL;
        }
        if (v == NULL) {
            if (cJSON_AddNumberToObject(m, metric_names[i], 0) == NULL)
                return CAIRN_ENOMEM;
            continue;
        }
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e9 ||
            v->valuedouble != (double)(int64_t)v->valuedouble)
            return bad(r, w, "must be a whole number from 0");
    }
    return CAIRN_OK;
}

/* Check o and fill in the defaults. What cannot be defaulted at the top
 * (session, outcome, a member of the wrong type) fails; an empty task is
 * the session's, and an item of decisions or events that cannot be used is
 * dropped: both noted in notes (may be NULL). */
static int normalise(cairn_reflex *r, cJSON *o, int64_t now, cJSON *notes)
{
    cJSON *v;
    const char *session, *oc;
    char def_ts[32], id[CAIRN_LABEL_MAX + 16];
    int rc;

    if (!cJSON_IsObject(o))
        return bad(r, "episode", "must be a JSON object");
    if ((rc = want_str(r, o, "session", "", "", 1)) != CAIRN_OK)
        return rc;
    session = cJSON_GetObjectItemCaseSensitive(o, "session")->valuestring;
    if (strlen(session) > CAIRN_LABEL_MAX - 8)
        return bad(r, "session", "too long");
    for (const char *p = session; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '/' || *p == '\\')
            return bad(r, "session", "must not hold control characters or slashes");
    snprintf(id, sizeof id, "episode-%s", session);
    v = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (v == NULL) {
        if (cJSON_AddStringToObject(o, "id", id) == NULL)
            return CAIRN_ENOMEM;
    } else if (!cJSON_IsString(v) || strcmp(v->valuestring, id) != 0) {
        return bad(r, "id", "must be \"episode-\" followed by the session id");
    }
    iso_of(now, def_ts, sizeof def_ts);
    if ((rc = want_time(r, o, "", def_ts)) != CAIRN_OK ||
        (rc = want_str(r, o, "outcome", "", "", 1)) != CAIRN_OK ||
        (rc = want_str(r, o, "task", "", "", 0)) != CAIRN_OK)
        return rc;
    v = cJSON_GetObjectItemCaseSensitive(o, "task");
    if (v->valuestring[0] == 0) { /* the session names what it was for */
        cJSON *task = cJSON_CreateString(session);
        if (task == NULL || !cJSON_ReplaceItemInObjectCaseSensitive(o, "task", task)) {
            cJSON_Delete(task);
            return cairn__rx_fail(r, CAIRN_ENOMEM, "no memory");
        }
        if ((rc = note(notes, "task: empty; the session id stands for it")) != CAIRN_OK)
            return cairn__rx_fail(r, rc, "no memory");
    }
    oc = cJSON_GetObjectItemCaseSensitive(o, "outcome")->valuestring;
    if (cairn__rx_outcome(oc, strlen(oc)) < 0)
        return bad(r, "outcome", "must be success, partial or failure");
    const char *ets = cJSON_GetObjectItemCaseSensitive(o, "timestamp")->valuestring;
    if ((rc = check_list(r, o, "decisions", ets, check_decision, notes)) != CAIRN_OK ||
        (rc = check_list(r, o, "events", ets, check_event, notes)) != CAIRN_OK ||
        (rc = want_strs(r, o, "lessons", "")) != CAIRN_OK || (rc = check_metrics(r, o)) != CAIRN_OK)
        return rc;
    return CAIRN_OK;
}

int cairn_episode_put(cairn_reflex *r, const char *json, size_t len, int force, char **json_out)
{
    return cairn_episode_put_noted(r, json, len, force, json_out, NULL);
}

int cairn_episode_put_noted(cairn_reflex *r, const char *json, size_t len, int force,
                            char **json_out, char **notes_out)
{
    cJSON *o = cJSON_ParseWithLength(json, len), *notes = cJSON_CreateArray();
    char *text = NULL;
    cairn__err e;
    rchange c;
    int rc, turn = 0;

    if (json_out != NULL)
        *json_out = NULL;
    if (notes_out != NULL)
        *notes_out = NULL;
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    if (notes == NULL) {
        rc = cairn__rx_fail(r, CAIRN_ENOMEM, "no memory");
        goto out;
    }
    if (o == NULL) {
        rc = bad(r, "episode", "not valid JSON");
        goto out;
    }
    /* Every member is kept: all of it follows the rule for text. */
    if (cairn__utf8_check_json(&e, NULL, NULL, json, len) != CAIRN_OK) {
        rc = cairn__rx_fail(r, CAIRN_EINVAL, "%s", e.msg);
        goto out;
    }
    if ((rc = normalise(r, o, cairn__now_ms(), notes)) != CAIRN_OK)
        goto out;
    if ((rc = cairn__rx_turn_begin(r)) != CAIRN_OK)
        goto out;
    turn = 1;
    const char *id = cJSON_GetObjectItemCaseSensitive(o, "id")->valuestring;
    uint32_t name = cairn__rx_name(r, id, strlen(id), 0);
    if (!force && name != R_NONE && r->epi_by_name[name] != 0) {
        rc = cairn__rx_fail(r, CAIRN_EEXIST, "episode %s exists (replace it with force)", id);
        goto out;
    }
    if ((text = cJSON_PrintUnformatted(o)) == NULL) {
        rc = cairn__rx_fail(r, CAIRN_ENOMEM, "no memory");
        goto out;
    }
    memset(&c, 0, sizeof c);
    c.rec = CAIRN_REC_EPISODE;
    c.label = id;
    c.len = strlen(id);
    const char *ts = cJSON_GetObjectItemCaseSensitive(o, "timestamp")->valuestring;
    const char *oc = cJSON_GetObjectItemCaseSensitive(o, "outcome")->valuestring;
    (void)cairn__rx_parse_time(ts, strlen(ts), &c.ep_ts);
    c.type = (uint32_t)cairn__rx_outcome(oc, strlen(oc));
    c.ep_json = text;
    c.ep_json_len = strlen(text);
    rc = cairn__rx_commit(r, &c, 1);
    if (rc == CAIRN_OK && json_out != NULL) {
        *json_out = text;
        text = NULL;
    }
    if (rc == CAIRN_OK && notes_out != NULL)
        *notes_out = cJSON_PrintUnformatted(notes); /* NULL out of memory: stored all the same */
out:
    if (turn)
        rc = cairn__rx_turn_end(r, rc);
    pthread_mutex_unlock(&r->mu);
    free(text);
    cJSON_Delete(o);
    cJSON_Delete(notes);
    return rc;
}

/* The record of episode e as text (malloc'd). */
static int read_episode(cairn_reflex *r, const repi *e, char **out)
{
    cairn_record *rec = NULL;
    int rc = cairn_get(r->db, e->seq, &rec);
    if (rc != CAIRN_OK)
        return cairn__rx_fail(r, rc, "reading episode record %" PRIu64 ": %s", e->seq,
                              cairn_errmsg(r->db));
    *out = malloc(rec->json_len + 1);
    if (*out != NULL) {
        memcpy(*out, rec->json, rec->json_len);
        (*out)[rec->json_len] = 0;
    }
    cairn_record_free(r->db, rec);
    return *out ? CAIRN_OK : cairn__rx_fail(r, CAIRN_ENOMEM, "no memory");
}

static const repi *find_episode(cairn_reflex *r, const char *session_or_id)
{
    char id[CAIRN_LABEL_MAX + 16];
    uint32_t name;
    if (strncmp(session_or_id, "episode-", 8) == 0)
        snprintf(id, sizeof id, "%s", session_or_id);
    else
        snprintf(id, sizeof id, "episode-%s", session_or_id);
    name = cairn__rx_name(r, id, strlen(id), 0);
    return name != R_NONE && r->epi_by_name[name] != 0 ? &r->epi[r->epi_by_name[name] - 1] : NULL;
}

int cairn_episode_get(cairn_reflex *r, const char *session_id, char **json_out)
{
    const repi *e;
    int rc;
    *json_out = NULL;
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    rc = cairn__rx_catch_up(r);
    e = rc == CAIRN_OK ? find_episode(r, session_id) : NULL;
    if (rc == CAIRN_OK)
        rc = e == NULL ? cairn__rx_fail(r, CAIRN_ENOTFOUND, "no episode for session %s", session_id)
                       : read_episode(r, e, json_out);
    pthread_mutex_unlock(&r->mu);
    return rc;
}

static const cairn_reflex *sort_ctx;

static int newest_first(const void *a, const void *b)
{
    const repi *x = *(const repi *const *)a, *y = *(const repi *const *)b;
    if (x->ts != y->ts)
        return x->ts > y->ts ? -1 : 1;
    return -strcmp(sort_ctx->names[x->name], sort_ctx->names[y->name]);
}

int cairn_episode_list(cairn_reflex *r, const cairn_episode_query *q, char **json_out)
{
    cairn_episode_query def = CAIRN_EPISODE_QUERY_INIT;
    const repi **v = NULL;
    cJSON *arr = NULL;
    size_t k = 0;
    int outcome = -1, rc;

    *json_out = NULL;
    if (q == NULL)
        q = &def;
    if (q->max_results < 1 || q->max_results > 100)
        return cairn__rx_fail(r, CAIRN_EINVAL, "max results must be between 1 and 100");
    if (q->outcome != NULL && (outcome = cairn__rx_outcome(q->outcome, strlen(q->outcome))) < 0)
        return cairn__rx_fail(r, CAIRN_EINVAL, "outcome must be success, partial or failure");
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    rc = cairn__rx_catch_up(r);
    if (rc == CAIRN_OK && ((v = malloc((r->n_epi + 1) * sizeof *v)) == NULL ||
                           (arr = cJSON_CreateArray()) == NULL))
        rc = cairn__rx_fail(r, CAIRN_ENOMEM, "no memory");
    for (size_t i = 0; rc == CAIRN_OK && i < r->n_epi; i++)
        if ((outcome < 0 || r->epi[i].outcome == (uint32_t)outcome) && r->epi[i].ts >= q->since_ms)
            v[k++] = &r->epi[i];
    if (rc == CAIRN_OK) {
        sort_ctx = r; /* under r->mu; qsort has no context argument */
        qsort(v, k, sizeof *v, newest_first);
    }
    for (size_t i = 0; rc == CAIRN_OK && i < k && i < q->max_results; i++) {
        char *text = NULL;
        cJSON *o;
        if ((rc = read_episode(r, v[i], &text)) != CAIRN_OK)
            break;
        o = cJSON_Parse(text);
        free(text);
        if (o == NULL || !cJSON_AddItemToArray(arr, o))
            rc = cairn__rx_fail(r, o == NULL ? CAIRN_ECORRUPT : CAIRN_ENOMEM,
                                "episode record %" PRIu64 " does not parse", v[i]->seq);
    }
    pthread_mutex_unlock(&r->mu);
    if (rc == CAIRN_OK && (*json_out = cJSON_PrintUnformatted(arr)) == NULL)
        rc = CAIRN_ENOMEM;
    cJSON_Delete(arr);
    free(v);
    return rc;
}

static int by_timestamp(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    const cJSON *tx = cJSON_GetObjectItemCaseSensitive(x, "timestamp");
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(y, "timestamp");
    int64_t mx = 0, my = 0;
    if (cJSON_IsString(tx))
        (void)cairn__rx_parse_time(tx->valuestring, strlen(tx->valuestring), &mx);
    if (cJSON_IsString(ty))
        (void)cairn__rx_parse_time(ty->valuestring, strlen(ty->valuestring), &my);
    if (mx != my)
        return mx < my ? -1 : 1;
    return x < y ? -1 : x > y; /* stable: the order they were given */
}

int cairn_episode_decisions(cairn_reflex *r, const char *episode_id, char **json_out)
{
    const repi *e;
    char *text = NULL;
    cJSON *o = NULL, *out = NULL;
    int rc;

    *json_out = NULL;
    pthread_mutex_lock(&r->mu);
    cairn__errbuf(r)[0] = 0;
    rc = cairn__rx_catch_up(r);
    e = rc == CAIRN_OK ? find_episode(r, episode_id) : NULL;
    if (rc == CAIRN_OK && e != NULL)
        rc = read_episode(r, e, &text);
    pthread_mutex_unlock(&r->mu);
    if (rc != CAIRN_OK)
        return rc;
    out = cJSON_CreateArray();
    if (text != NULL && (o = cJSON_Parse(text)) != NULL) {
        cJSON *d = cJSON_DetachItemFromObjectCaseSensitive(o, "decisions"), *x;
        size_t n = 0, i = 0;
        cJSON **v;
        cJSON_ArrayForEach(x, d)
            n++;
        v = malloc((n + 1) * sizeof *v);
        if (v != NULL && out != NULL) {
            cJSON_ArrayForEach(x, d)
                v[i++] = x;
            qsort(v, n, sizeof *v, by_timestamp);
            for (i = 0; i < n; i++)
                cJSON_AddItemReferenceToArray(out, v[i]);
            *json_out = cJSON_PrintUnformatted(out);
        }
        free(v);
        cJSON_Delete(d);
    } else if (out != NULL) {
        *json_out = cJSON_PrintUnformatted(out);
    }
    cJSON_Delete(out);
    cJSON_Delete(o);
    free(text);
    return *json_out != NULL ? CAIRN_OK : CAIRN_ENOMEM;
}

int cairn_episode_extract(const char *file_name, const char *data, size_t len, char **json_out,
                          char *err)
{
    const char *base = strrchr(file_name, '/');
    cairn__err e;
    cJSON *o = NULL;
    int rc;

    *json_out = NULL;
    base = base ? base + 1 : file_name;
    e.msg[0] = 0;
    rc = cairn__extract_episode(base, strlen(base), data, len, &o, &e);
    if (rc == CAIRN_OK && (*json_out = cJSON_Print(o)) == NULL)
        rc = cairn__fail(&e, CAIRN_ENOMEM, "no memory");
    cJSON_Delete(o);
    if (rc != CAIRN_OK && err != NULL)
        snprintf(err, CAIRN_ERRMSG_MAX, "%s", e.msg);
    if (rc != CAIRN_OK) /* and where cairn_errmsg(NULL) reads it */
        snprintf(cairn__errbuf(NULL), CAIRN_ERRMSG_MAX, "%s", e.msg);
    return rc;
}
