/*
 * extract.c - cairn__extract_episode: one agent session log in, one
 * reflexion episode out (the shape is in extract.h). This file holds the
 * entry point, the input checks and the episode builder; extract_text.c
 * the bounded text buffer, the word classifiers and timestamps;
 * extract_md.c and extract_json.c read the two log formats and feed the
 * builder.
 *
 * Inputs are untrusted: a log is checked whole for valid UTF-8 without NUL
 * before anything is read, every output string goes through an xtext (at
 * most EXTRACT_STR_MAX bytes, cut on a code point), every array stops at
 * EXTRACT_ARR_MAX items, and every scan is linear in the input (look-aheads
 * are bounded), so a hostile log costs time and memory in proportion to its
 * size and cannot blow up the episode.
 *
 * The outcome rule (the worst signal wins; no signal means success):
 *   failure - an explicit status/outcome says failed / blocked / error /
 *             aborted / abandoned;
 *   partial - an explicit status says in progress / pending / awaiting /
 *             incomplete / partial, or a session-end checklist leaves a MUST
 *             item (or, in markdown, any closure-checklist box) undone that
 *             is not marked N/A or skipped, or a JSON endingCommit is
 *             "pending";
 *   success - otherwise (a status of complete / done / merged / passed /
 *             resolved, or no status at all).
 * "Explicit status" is a JSON status/outcome field, or a markdown
 * **Status** / **Session Status** / **Outcome** line in the header block or a
 * status/summary/closure section, or the first line of a "## Status"
 * section; of several words in one phrase the first one counts, so
 * "COMPLETE - all incomplete items tracked" is complete. Words elsewhere in
 * the log (a test that failed and was fixed) do not decide the outcome: they
 * become error events and the errors / recoveries metrics.
 *
 * Event types: commit (a commit hash in a line about commits, a JSON
 * endingCommit / crossReferences.commits / changesCommitted evidence; the
 * session's starting commit excluded; each hash once), error (a work item
 * naming a failure without its fix, an incident/bug section), test (a work
 * item about tests, a completed JSON validation item), handoff (next steps,
 * hand-offs and delegations), tool_call (a command in a shell code block or
 * a work item that is a command), milestone (every other completed work item:
 * JSON workLog entries, checked boxes, deliverables and work-section list
 * items). Work items of one log are chained in order (each leads_to the
 * next), as the original tool did: the sequence stands in for causation.
 * A decision made by a work item ("Selected X because Y") has that item's
 * event as its effect.
 *
 * Task: the log's objective (**Objective** line, Objective section, JSON
 * session.objective), else the markdown title, else "Session N - DATE".
 * Metrics: duration_minutes from a Duration line or episodeMetrics, else
 * the span of the work log's own times (wall clock, not effort);
 * tool_calls the tool_call events (or an explicit count); commits the
 * distinct hashes; files_changed an explicit count (Files Modified,
 * episodeMetrics.filesChanged), else the distinct workLog files, else the
 * largest "N files changed" in the text; errors / recoveries count failures
 * met / mended (an error event, or a work item naming both).
 */
#include "extract.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extract_int.h"
#include "utf8.h"

/* ---- the builder ------------------------------------------------------- */

static int wchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c >= 0x80;
}

static void oom(xb *b)
{
    if (b->rc == CAIRN_OK)
        b->rc = CAIRN_ENOMEM;
}

static void put_s(xb *b, cJSON *o, const char *k, const char *v)
{
    if (b->rc == CAIRN_OK && cJSON_AddStringToObject(o, k, v) == NULL)
        oom(b);
}

static void put_arr(xb *b, cJSON *o, const char *k)
{
    if (b->rc == CAIRN_OK && cJSON_AddArrayToObject(o, k) == NULL)
        oom(b);
}

/* Append id to arr unless present or full. */
static void add_ref(xb *b, cJSON *arr, const char *id)
{
    cJSON *it, *s;
    int n = 0;
    if (b->rc != CAIRN_OK || arr == NULL)
        return;
    cJSON_ArrayForEach(it, arr) {
        if (strcmp(it->valuestring, id) == 0)
            return;
        n++;
    }
    if (n >= EXTRACT_ARR_MAX)
        return;
    if ((s = cJSON_CreateString(id)) == NULL || !cJSON_AddItemToArray(arr, s)) {
        cJSON_Delete(s);
        oom(b);
    }
}

/* Add o to arr, or free it and note the failure. */
static int append(xb *b, cJSON *arr, cJSON *o)
{
    if (b->rc != CAIRN_OK || o == NULL || !cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        oom(b);
        return 0;
    }
    return 1;
}

int cairn__xb_event(xb *b, const char *type, const xtext *content, const char *ts)
{
    char id[16];
    cJSON *o;
    if (b->rc != CAIRN_OK || b->nev >= EXTRACT_ARR_MAX || content == NULL || content->n == 0)
        return -1;
    snprintf(id, sizeof id, "e%03zu", b->nev + 1);
    if ((o = cJSON_CreateObject()) == NULL) {
        oom(b);
        return -1;
    }
    put_s(b, o, "id", id);
    put_s(b, o, "timestamp", ts != NULL ? ts : b->ts);
    put_s(b, o, "type", type);
    put_s(b, o, "content", content->s);
    put_arr(b, o, "caused_by");
    put_arr(b, o, "leads_to");
    if (!append(b, b->events, o))
        return -1;
    b->ev[b->nev] = o;
    return (int)b->nev++;
}

int cairn__xb_decision(xb *b, const char *type, const xtext *context, const xtext *chosen,
                       const xtext *rationale, const char *outcome, const char *ts,
                       cJSON *options)
{
    char id[16];
    cJSON *o;
    if (b->rc != CAIRN_OK || b->ndc >= EXTRACT_ARR_MAX || chosen == NULL || chosen->n == 0) {
        cJSON_Delete(options);
        return -1;
    }
    snprintf(id, sizeof id, "d%03zu", b->ndc + 1);
    if ((o = cJSON_CreateObject()) == NULL) {
        cJSON_Delete(options);
        oom(b);
        return -1;
    }
    put_s(b, o, "id", id);
    put_s(b, o, "timestamp", ts != NULL ? ts : b->ts);
    put_s(b, o, "type", type != NULL ? type : cairn__x_dtype(chosen, rationale, context));
    put_s(b, o, "context", context != NULL ? context->s : "");
    put_s(b, o, "chosen", chosen->s);
    put_s(b, o, "rationale", rationale != NULL ? rationale->s : "");
    put_s(b, o, "outcome", outcome != NULL ? outcome : "success");
    put_arr(b, o, "effects");
    if (cJSON_GetArraySize(options) == 0) {
        cJSON_Delete(options);
    } else if (!cJSON_AddItemToObject(o, "options", options)) { /* the alternatives weighed */
        cJSON_Delete(options);
        oom(b);
    }
    if (!append(b, b->decisions, o))
        return -1;
    b->dc_fixed[b->ndc] = outcome != NULL;
    b->dc[b->ndc] = o;
    return (int)b->ndc++;
}

void cairn__xb_option(xb *b, cJSON **opts, const xtext *t)
{
    cJSON *s;
    if (b->rc != CAIRN_OK || t->n == 0 || cJSON_GetArraySize(*opts) >= EXTRACT_ARR_MAX)
        return;
    if ((*opts == NULL && (*opts = cJSON_CreateArray()) == NULL) ||
        (s = cJSON_CreateString(t->s)) == NULL) {
        oom(b);
        return;
    }
    if (!cJSON_AddItemToArray(*opts, s)) {
        cJSON_Delete(s);
        oom(b);
    }
}

void cairn__xb_lesson(xb *b, const xtext *t)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a: a repeat costs 8-byte compares */
    cJSON *it;
    size_t i = 0;
    if (b->rc != CAIRN_OK || b->nlessons >= EXTRACT_ARR_MAX || t->n == 0)
        return;
    for (size_t k = 0; k < t->n; k++)
        h = (h ^ (unsigned char)t->s[k]) * 1099511628211ull;
    cJSON_ArrayForEach(it, b->lessons) {
        if (b->lhash[i] == h && strcmp(it->valuestring, t->s) == 0)
            return;
        i++;
    }
    if (append(b, b->lessons, cJSON_CreateString(t->s)))
        b->lhash[b->nlessons++] = h;
}

void cairn__xb_link(xb *b, int from, int to)
{
    if (from < 0 || to < 0 || from == to || (size_t)from >= b->nev || (size_t)to >= b->nev)
        return;
    add_ref(b, cJSON_GetObjectItemCaseSensitive(b->ev[from], "leads_to"),
            cJSON_GetObjectItemCaseSensitive(b->ev[to], "id")->valuestring);
    add_ref(b, cJSON_GetObjectItemCaseSensitive(b->ev[to], "caused_by"),
            cJSON_GetObjectItemCaseSensitive(b->ev[from], "id")->valuestring);
}

void cairn__xb_effect(xb *b, int d, int ev)
{
    if (d < 0 || ev < 0 || (size_t)d >= b->ndc || (size_t)ev >= b->nev)
        return;
    add_ref(b, cJSON_GetObjectItemCaseSensitive(b->dc[d], "effects"),
            cJSON_GetObjectItemCaseSensitive(b->ev[ev], "id")->valuestring);
    add_ref(b, cJSON_GetObjectItemCaseSensitive(b->ev[ev], "caused_by"),
            cJSON_GetObjectItemCaseSensitive(b->dc[d], "id")->valuestring);
}

int cairn__xb_work(xb *b, const xtext *t, const char *ts)
{
    int err, fixed;
    const char *type = cairn__x_classify(t, &err, &fixed);
    if (t->n == 0)
        return -1;
    b->errors += err;
    b->recoveries += fixed;
    return cairn__xb_event(b, type, t, ts);
}

static int hexdig(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Next commit-like hash in p[*i..len): sets *at / *n, advances *i. */
static int next_hash(const char *p, size_t len, size_t *i, size_t *at, size_t *n)
{
    const unsigned char *s = (const unsigned char *)p;
    while (*i < len) {
        size_t a = *i, e = a;
        int dig = 0, let = 0;
        if (!hexdig(s[a]) || (a > 0 && (wchar(s[a - 1]) || s[a - 1] == '#' || s[a - 1] == '-' ||
                                         s[a - 1] == '/' || s[a - 1] == '.'))) {
            (*i)++;
            continue;
        }
        while (e < len && hexdig(s[e])) {
            dig |= s[e] <= '9';
            let |= s[e] >= 'a';
            e++;
        }
        *i = e;
        if (e - a < 7 || e - a > 40 || !dig || !let || (e < len && (wchar(s[e]) || s[e] == '-')))
            continue;
        *at = a;
        *n = e - a;
        return 1;
    }
    return 0;
}

/* The words after a hash up to the end of their clause ("ef75154 - fix(x):
 * correct exit codes, ..."), when they say something (12+ bytes). */
static void snippet(xtext *c, const char *p, size_t len)
{
    size_t i = 0, e, lim = len < 160 ? len : 160;
    int depth = 0;
    while (i < lim && (p[i] == ' ' || p[i] == '-' || p[i] == ':' || p[i] == '`' || p[i] == '*'))
        i++;
    for (e = i; e < lim && p[e] != '\n' && p[e] != ',' && p[e] != ';' && p[e] != '|'; e++) {
        if (p[e] == '(')
            depth++;
        else if (p[e] == ')' && depth-- == 0)
            break;
        else if (p[e] == '.' && (e + 1 == len || p[e + 1] == ' '))
            break;
    }
    while (e > i && e < len && ((unsigned char)p[e] & 0xC0) == 0x80)
        e--; /* end on a code point boundary */
    if (e - i >= 12) {
        cairn__xt_puts(c, " - ");
        cairn__xt_md(c, p + i, e - i);
    }
}

/* 1 if one of the two hashes is a prefix of the other. */
static int same_commit(const char *a, const char *h, size_t n)
{
    size_t al = strlen(a);
    return memcmp(a, h, al < n ? al : n) == 0;
}

int cairn__xb_commits(xb *b, const char *p, size_t len, const xtext *ctx, int cause,
                      const char *ts)
{
    size_t i = 0, at, n, k;
    int last = -1;
    while (b->nsha < EXTRACT_ARR_MAX && next_hash(p, len, &i, &at, &n)) {
        xtext c;
        int ev;
        if (b->start_sha[0] != 0 && same_commit(b->start_sha, p + at, n))
            continue;
        for (k = 0; k < b->nsha; k++)
            if (same_commit(b->sha[k], p + at, n))
                break;
        if (k < b->nsha)
            continue;
        memcpy(b->sha[b->nsha], p + at, n);
        b->sha[b->nsha++][n] = 0;
        cairn__xt_init(&c);
        cairn__xt_puts(&c, "Commit: ");
        cairn__xt_put(&c, p + at, n);
        if (ctx != NULL && ctx->n > 0) {
            cairn__xt_puts(&c, " - ");
            cairn__xt_put(&c, ctx->s, ctx->n);
        } else {
            snippet(&c, p + at + n, len - at - n);
        }
        if ((ev = cairn__xb_event(b, "commit", &c, ts)) >= 0) {
            cairn__xb_link(b, cause, ev);
            last = ev;
        }
    }
    return last;
}

void cairn__xb_start_commit(xb *b, const char *p, size_t len)
{
    size_t i = 0, at, n;
    if (b->start_sha[0] == 0 && next_hash(p, len, &i, &at, &n)) {
        memcpy(b->start_sha, p + at, n);
        b->start_sha[n] = 0;
    }
}

void cairn__xb_timed(xb *b, long long epoch)
{
    if (b->ntimed++ == 0 || epoch < b->t_min)
        b->t_min = epoch;
    if (b->ntimed == 1 || epoch > b->t_max)
        b->t_max = epoch;
}

/* ---- the entry point --------------------------------------------------- */

static const char *const OUTCOME[] = {"success", "partial", "failure"};

static double clampi(long long v)
{
    return v < 0 ? 0 : v > INT32_MAX ? (double)INT32_MAX : (double)v;
}

/* The episode object from the builder's parts; takes the arrays. */
static cJSON *assemble(xb *b, const char *sid, size_t sid_len)
{
    int oc = b->status > X_SUCCESS ? b->status : X_SUCCESS;
    cJSON *root, *m;
    xtext t;
    if (b->open_must > 0 && oc < X_PARTIAL)
        oc = X_PARTIAL;
    /* in place: every outcome word is 7 bytes, so this never allocates
     * (cJSON_ReplaceItem* would, and ignores a failed key copy) */
    for (size_t i = 0; i < b->ndc && b->rc == CAIRN_OK; i++)
        if (!b->dc_fixed[i] &&
            cJSON_SetValuestring(cJSON_GetObjectItemCaseSensitive(b->dc[i], "outcome"),
                                 OUTCOME[oc]) == NULL)
            oom(b);
    if (b->rc != CAIRN_OK || (root = cJSON_CreateObject()) == NULL) {
        oom(b);
        return NULL;
    }
    { /* the name was checked: UTF-8 without controls, at most EXTRACT_SESSION_MAX bytes */
        char id[EXTRACT_SESSION_MAX + 9];
        memcpy(id, "episode-", 8);
        memcpy(id + 8, sid, sid_len);
        id[8 + sid_len] = 0;
        put_s(b, root, "id", id);
        put_s(b, root, "session", id + 8);
    }
    put_s(b, root, "timestamp", b->ts);
    put_s(b, root, "outcome", OUTCOME[oc]);
    if (b->task.n == 0) {
        char num[32];
        cairn__xt_init(&t);
        cairn__xt_puts(&t, "Session ");
        if (b->number >= 0) {
            snprintf(num, sizeof num, "%ld", b->number);
            cairn__xt_puts(&t, num);
        } else {
            cairn__xt_put(&t, sid, sid_len);
        }
        cairn__xt_puts(&t, " - ");
        cairn__xt_put(&t, b->ts, 10);
        put_s(b, root, "task", t.s);
    } else {
        put_s(b, root, "task", b->task.s);
    }
    /* each array changes owner only once attached */
    if (b->rc == CAIRN_OK && cJSON_AddItemToObject(root, "decisions", b->decisions))
        b->decisions = NULL;
    if (b->rc == CAIRN_OK && b->decisions == NULL &&
        cJSON_AddItemToObject(root, "events", b->events))
        b->events = NULL;
    if (b->rc != CAIRN_OK || b->events != NULL ||
        (m = cJSON_AddObjectToObject(root, "metrics")) == NULL) {
        oom(b);
        cJSON_Delete(root);
        return NULL;
    }
    if (cJSON_AddNumberToObject(m, "duration_minutes",
                                clampi(b->duration >= 0 ? b->duration
                                       : b->ntimed >= 2 ? (b->t_max - b->t_min) / 60 : 0)) == NULL ||
        cJSON_AddNumberToObject(m, "tool_calls",
                                clampi(b->tool_calls > b->ntool ? b->tool_calls : b->ntool)) == NULL ||
        cJSON_AddNumberToObject(m, "errors", clampi(b->errors)) == NULL ||
        cJSON_AddNumberToObject(m, "recoveries", clampi(b->recoveries)) == NULL ||
        cJSON_AddNumberToObject(m, "commits", clampi((long long)b->nsha)) == NULL ||
        cJSON_AddNumberToObject(m, "files_changed", clampi(b->files_changed)) == NULL) {
        oom(b);
        cJSON_Delete(root);
        return NULL;
    }
    if (!cJSON_AddItemToObject(root, "lessons", b->lessons)) {
        oom(b);
        cJSON_Delete(root);
        return NULL;
    }
    b->lessons = NULL;
    return root;
}

int cairn__extract_episode(const char *name, size_t name_len, const char *data, size_t len,
                           cJSON **out, cairn__err *e)
{
    size_t sid_len = name_len, bad, i = 0;
    int nul, rc, timed, json;
    long long ep;
    xb *b;

    *out = NULL;
    if (name == NULL || (data == NULL && len > 0))
        return cairn__fail(e, CAIRN_EINVAL, "extract: no name or no data");
    if ((bad = cairn__utf8_bad(name, name_len, &nul)) < name_len)
        return cairn__fail(e, CAIRN_EINVAL, "log name: %s at byte %zu",
                           nul ? "NUL" : "invalid UTF-8", bad);
    for (size_t k = 0; k < name_len; k++)
        if ((unsigned char)name[k] < 0x20 || name[k] == 0x7F || name[k] == '/' || name[k] == '\\')
            return cairn__fail(e, CAIRN_EINVAL, "log name: byte %zu is a control character or "
                               "a slash (a base name is expected)", k);
    for (size_t k = name_len; k > 0; k--)
        if (name[k - 1] == '.') {
            sid_len = k - 1;
            break;
        }
    if (sid_len == 0 || sid_len > EXTRACT_SESSION_MAX)
        return cairn__fail(e, CAIRN_EINVAL, "log name: no session id (the name less its "
                           "extension must be 1..%d bytes)", EXTRACT_SESSION_MAX);
    if ((bad = cairn__utf8_bad(data, len, &nul)) < len)
        return cairn__fail(e, CAIRN_EINVAL, nul ? "log: NUL byte at offset %zu"
                           : "log: invalid UTF-8 at offset %zu", bad);
    if ((b = calloc(1, sizeof *b)) == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "no memory");
    b->status = X_NONE;
    b->duration = b->tool_calls = b->files_changed = -1;
    b->number = -1;
    cairn__xt_init(&b->task);
    b->events = cJSON_CreateArray();
    b->decisions = cJSON_CreateArray();
    b->lessons = cJSON_CreateArray();
    if (b->events == NULL || b->decisions == NULL || b->lessons == NULL)
        oom(b);
    /* defaults from the name: its date prefix and "session-N" */
    if (sid_len < 10 || (sid_len > 10 && name[10] >= '0' && name[10] <= '9') ||
        !cairn__x_ts(name, 10, b->ts, &timed, &ep))
        b->ts[0] = 0;
    for (size_t k = 0; k + 8 < sid_len; k++)
        if (memcmp(name + k, "session-", 8) == 0 && name[k + 8] >= '0' && name[k + 8] <= '9') {
            long v = 0;
            for (size_t j = k + 8; j < sid_len && j < k + 17 && name[j] >= '0' && name[j] <= '9'; j++)
                v = v * 10 + (name[j] - '0');
            b->number = v;
            break;
        }
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        data += 3, len -= 3;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    /* JSON when it starts with '{' or the name says .json (so a .json log
     * that is an array or a bare value is rejected, not read as markdown) */
    json = i < len && data[i] == '{';
    if (name_len - sid_len == 5) {
        char ext[5];
        for (size_t k = 0; k < 4; k++)
            ext[k] = (char)(name[sid_len + 1 + k] | 0x20);
        json |= memcmp(ext, "json", 4) == 0;
    }
    rc = b->rc;
    if (rc == CAIRN_OK)
        rc = json ? cairn__extract_json(b, data, len, e) : cairn__extract_md(b, data, len);
    if (rc == CAIRN_OK)
        rc = b->rc;
    if (rc == CAIRN_OK && b->ts[0] == 0)
        rc = cairn__fail(e, CAIRN_EINVAL, "log: no date (no Date line or date field, and the "
                         "name has no YYYY-MM-DD prefix)");
    if (rc == CAIRN_OK && (*out = assemble(b, name, sid_len)) == NULL)
        rc = CAIRN_ENOMEM;
    if (rc == CAIRN_ENOMEM) /* the only other failure, wherever it happened */
        cairn__fail(e, CAIRN_ENOMEM, "no memory");
    cJSON_Delete(b->events);
    cJSON_Delete(b->decisions);
    cJSON_Delete(b->lessons);
    free(b);
    return rc;
}
