/*
 * extract_json.c - the JSON session log reader of the episode extractor.
 *
 * A JSON log (schema 1.0 of the agent session logs) is one object:
 *
 *   session            {number, date, branch, startingCommit, objective}
 *   protocolCompliance {sessionStart: {...}, sessionEnd: {<check>: {complete |
 *                      Complete | status, level, evidence}}}
 *   workLog            [ string | {action | activity | step | entry | task |
 *                      summary | phase, result | outcome | detail(s) |
 *                      evidence, files, actions: [...], timestamp | time} ]
 *   decisions          [ {decision | chosen, rationale, alternative, context} ]
 *   learnings          [ string | {text | lesson} ]
 *   nextSteps          [ string ]
 *   endingCommit, crossReferences.commits, commits, outcomes.deliverables,
 *   episodeMetrics     {filesChanged, durationMinutes, toolCalls}, status
 *
 * Every field is optional and any may have the wrong type: a field of an
 * unexpected type is ignored, never an error. Only a log that does not
 * parse, has bytes after its object, is not an object, or has a string
 * holding \u0000 (utf8.h: the rule for text) is rejected.
 * workLog entries become work events in order (chained), the check items of
 * sessionEnd give the outcome's MUST rule, commit hashes in commit contexts
 * become commit events, retrospective entries become lessons, and entries
 * that start like a decision ("Selected ...", phase "decision") become a
 * decision as well as an event (the decision's effect).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "extract_int.h"
#include "utf8.h"

#define FILESET 2048 /* slots of the distinct-file set (more than EXTRACT_ARR_MAX) */

typedef struct jr {
    xb *b;
    int prev;                  /* last work event, for the chain */
    uint64_t files[FILESET];   /* hashes of distinct workLog files (0 = empty) */
    long nfiles;
    long files_said;           /* largest "N files changed" in the text */
} jr;

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItem(o, k) : NULL;
}

/* v if it is an array, else NULL (for cJSON_ArrayForEach). */
static const cJSON *arr(const cJSON *v)
{
    return cJSON_IsArray(v) ? v : NULL;
}

static const cJSON *obj(const cJSON *v)
{
    return cJSON_IsObject(v) ? v : NULL;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    return cJSON_IsString(v) && v->valuestring[0] != 0 ? v->valuestring : NULL;
}

/* The first of keys holding a non-empty string or array; its key in *which. */
static const cJSON *first(const cJSON *o, const char *const *keys, const char **which)
{
    for (; *keys != NULL; keys++) {
        const cJSON *v = get(o, *keys);
        if ((cJSON_IsString(v) && v->valuestring[0] != 0) ||
            (cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0)) {
            if (which != NULL)
                *which = *keys;
            return v;
        }
    }
    return NULL;
}

/* Case-insensitive substring (camelCase keys such as changesCommitted). */
static int has_sub(const char *s, const char *w)
{
    size_t n = strlen(s), k = strlen(w);
    for (size_t i = 0; i + k <= n; i++) {
        size_t j = 0;
        while (j < k && (s[i + j] | 0x20) == w[j])
            j++;
        if (j == k)
            return 1;
    }
    return 0;
}

/* A string, or the strings of an array joined with "; ". */
static void jtext(xtext *t, const cJSON *v)
{
    const cJSON *it;
    if (cJSON_IsString(v)) {
        cairn__xt_md(t, v->valuestring, strlen(v->valuestring));
        return;
    }
    cJSON_ArrayForEach(it, arr(v)) {
        if (!cJSON_IsString(it) || it->valuestring[0] == 0)
            continue;
        if (t->n > 0)
            cairn__xt_puts(t, ";");
        t->space = t->n > 0;
        cairn__xt_md(t, it->valuestring, strlen(it->valuestring));
        if (t->full)
            break;
    }
}

/* A non-negative whole number field, or -1. */
static long num(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 2147483647.0)
        return -1;
    return (long)v->valuedouble;
}

/* The item's own time, if it has one: ts filled and 1. */
static int item_ts(xb *b, const cJSON *o, char ts[21])
{
    static const char *const K[] = {"timestamp", "time", "at", "ts", "date", NULL};
    for (size_t i = 0; K[i] != NULL; i++) {
        const char *s = str(o, K[i]);
        int timed;
        long long ep;
        if (s != NULL && cairn__x_ts(s, strlen(s), ts, &timed, &ep)) {
            if (timed)
                cairn__xb_timed(b, ep);
            return 1;
        }
    }
    return 0;
}

/* Count "N files changed / modified / updated" and commits in raw text. */
static void scan_text(jr *r, const char *s, const xtext *ctx, int cause, const char *ts)
{
    size_t n = strlen(s);
    static const char *const FW[] = {"files changed", "files modified", "files updated",
        "file changed", NULL};
    for (size_t k = 0; FW[k] != NULL; k++) {
        const char *p = s;
        while ((p = strstr(p, FW[k])) != NULL) {
            const char *d = p;
            long v = 0, mul = 1;
            while (d > s && d[-1] == ' ')
                d--;
            while (d > s && d[-1] >= '0' && d[-1] <= '9' && mul < 1000000000L)
                v += (d[-1] - '0') * mul, mul *= 10, d--;
            if (mul > 1 && v > r->files_said)
                r->files_said = v;
            p += strlen(FW[k]);
        }
    }
    if (cairn__x_word(s, n, "commit*") || has_sub(s, "commit") || cairn__x_word(s, n, "sha"))
        cairn__xb_commits(r->b, s, n, ctx, cause, ts);
}

static void scan_value(jr *r, const cJSON *v, const xtext *ctx, int cause, const char *ts)
{
    const cJSON *it;
    if (cJSON_IsString(v))
        scan_text(r, v->valuestring, ctx, cause, ts);
    cJSON_ArrayForEach(it, arr(v))
        if (cJSON_IsString(it))
            scan_text(r, it->valuestring, ctx, cause, ts);
}

static void add_files(jr *r, const cJSON *files)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, arr(files)) {
        uint64_t h = 1469598103934665603ull;
        size_t i;
        if (!cJSON_IsString(it) || it->valuestring[0] == 0 || r->nfiles >= EXTRACT_ARR_MAX)
            continue;
        for (const char *c = it->valuestring; *c; c++)
            h = (h ^ (unsigned char)*c) * 1099511628211ull;
        h |= 1;
        for (i = h % FILESET; r->files[i] != 0 && r->files[i] != h; i = (i + 1) % FILESET)
            ;
        if (r->files[i] == 0) {
            r->files[i] = h;
            r->nfiles++;
        }
    }
}

static int chain(jr *r, int ev)
{
    if (ev >= 0) {
        cairn__xb_link(r->b, r->prev, ev);
        r->prev = ev;
    }
    return ev;
}

static void lessons_of(xb *b, const cJSON *v)
{
    static const char *const K[] = {"text", "lesson", "learning", "summary", "description",
        "insight", NULL};
    const cJSON *it;
    xtext t;
    if (cJSON_IsString(v)) {
        cairn__xt_init(&t);
        jtext(&t, v);
        cairn__xb_lesson(b, &t);
    }
    cJSON_ArrayForEach(it, arr(v)) {
        cairn__xt_init(&t);
        jtext(&t, cJSON_IsObject(it) ? first(it, K, NULL) : it);
        cairn__xb_lesson(b, &t);
    }
}

/* A decision from a decisions[] item, a workLog entry, or a string. */
static int decision(jr *r, const cJSON *o, const xtext *fallback, const char *ts)
{
    static const char *const CH[] = {"decision", "chosen", "choice", "title", "summary", "what",
        NULL};
    static const char *const RA[] = {"rationale", "reason", "why", "because", NULL};
    static const char *const CX[] = {"context", "problem", "situation", "question", NULL};
    static const char *const AL[] = {"alternative", "alternatives", "rejected", "options", NULL};
    static const char *const TY[] = {"design", "implementation", "test", "recovery", "routing",
        NULL};
    static const char *const OC[] = {"success", "partial", "failure", NULL};
    const char *type = NULL, *oc = NULL, *s;
    const cJSON *al;
    cJSON *opts = NULL;
    xtext ch, ra, cx;
    size_t cut, rest;
    cairn__xt_init(&ch);
    cairn__xt_init(&ra);
    cairn__xt_init(&cx);
    if (fallback != NULL)
        ch = *fallback;
    else
        jtext(&ch, cJSON_IsObject(o) ? first(o, CH, NULL) : o);
    jtext(&ra, first(o, RA, NULL));
    jtext(&cx, first(o, CX, NULL));
    if (cJSON_IsObject(o) && (al = first(o, AL, NULL)) != NULL) {
        /* the alternatives weighed: the decision's options, one string each */
        const cJSON *it;
        xtext t;
        if (cJSON_IsArray(al)) {
            cJSON_ArrayForEach(it, al) {
                cairn__xt_init(&t);
                jtext(&t, it);
                cairn__xb_option(r->b, &opts, &t);
            }
        } else {
            cairn__xt_init(&t);
            jtext(&t, al);
            cairn__xb_option(r->b, &opts, &t);
        }
    }
    if (cx.n == 0) /* taken towards the session's objective */
        cx = r->b->task;
    if (ra.n == 0 && cairn__x_because(&ch, &cut, &rest)) {
        xtext c2;
        cairn__xt_init(&c2);
        cairn__xt_put(&c2, ch.s, cut);
        cairn__xt_put(&ra, ch.s + rest, ch.n - rest);
        ch = c2;
    }
    if ((s = str(o, "type")) != NULL)
        for (size_t i = 0; TY[i] != NULL; i++)
            if (strcmp(s, TY[i]) == 0)
                type = TY[i];
    if ((s = str(o, "outcome")) != NULL)
        for (size_t i = 0; OC[i] != NULL; i++)
            if (strcmp(s, OC[i]) == 0)
                oc = OC[i];
    return cairn__xb_decision(r->b, type, &cx, &ch, &ra, oc, ts, opts);
}

/* One workLog entry. */
static void work_item(jr *r, const cJSON *o)
{
    static const char *const PRIM[] = {"action", "activity", "step", "task", "entry", "summary",
        "title", "description", "what", "event", "name", NULL};
    static const char *const SEC[] = {"result", "outcome", "detail", "details", "evidence",
        "notes", "output", "summary", "findings", NULL};
    xb *b = r->b;
    const char *pk = NULL, *phase = str(o, "phase");
    const cJSON *prim, *sec = NULL, *acts, *it;
    char tsb[21];
    const char *ts = NULL;
    xtext t;
    int ev;

    if (cJSON_IsString(o)) {
        cairn__xt_init(&t);
        jtext(&t, o);
        ev = chain(r, cairn__xb_work(b, &t, NULL));
        scan_text(r, o->valuestring, NULL, ev, NULL);
        return;
    }
    if (!cJSON_IsObject(o))
        return;
    if (item_ts(b, o, tsb))
        ts = tsb;
    prim = first(o, PRIM, &pk);
    for (size_t i = 0; SEC[i] != NULL && sec == NULL; i++) {
        const char *one[2] = {SEC[i], NULL};
        if (pk == NULL || strcmp(SEC[i], pk) != 0)
            sec = first(o, one, NULL);
    }
    add_files(r, get(o, "files"));
    /* a retrospective entry ("retrospective", "Learnings captured: X"):
     * its details are lessons */
    if ((phase != NULL && cairn__x_lessonish(phase, strlen(phase))) ||
        (cJSON_IsString(prim) && cairn__x_lessonish(prim->valuestring,
                                                     strcspn(prim->valuestring, " :-")))) {
        const char *c = cJSON_IsString(prim) ? strchr(prim->valuestring, ':') : NULL;
        if (sec != NULL || c == NULL || c - prim->valuestring > 40 || c[1] == 0) {
            lessons_of(b, sec != NULL ? sec : prim);
        } else {
            cairn__xt_init(&t);
            cairn__xt_md(&t, c + 1, strlen(c + 1));
            cairn__xb_lesson(b, &t);
        }
        return;
    }
    acts = get(o, "actions");
    if (cJSON_IsArray(acts) && cJSON_GetArraySize(acts) > 0 && prim == NULL) {
        cJSON_ArrayForEach(it, acts) {
            if (!cJSON_IsString(it))
                continue;
            cairn__xt_init(&t);
            if (phase != NULL) {
                cairn__xt_md(&t, phase, strlen(phase));
                cairn__xt_puts(&t, ": ");
            }
            jtext(&t, it);
            ev = chain(r, cairn__xb_work(b, &t, ts));
            scan_text(r, it->valuestring, NULL, ev, ts);
        }
        return;
    }
    cairn__xt_init(&t);
    if (phase != NULL && (prim == NULL || sec == NULL || strcmp(pk, "summary") == 0)) {
        cairn__xt_md(&t, phase, strlen(phase));
        cairn__xt_puts(&t, ": ");
    }
    jtext(&t, prim);
    if (sec != NULL) {
        if (prim != NULL)
            cairn__xt_puts(&t, " -> ");
        jtext(&t, sec);
    }
    if (t.n == 0)
        return;
    ev = chain(r, cairn__xb_work(b, &t, ts));
    scan_value(r, prim, NULL, ev, ts);
    scan_value(r, sec, NULL, ev, ts);
    {
        xtext c;
        cairn__xt_init(&c);
        jtext(&c, prim != NULL ? prim : sec);
        if ((phase != NULL && cairn__x_word(phase, strlen(phase), "decision*")) ||
            cairn__x_decides(&c))
            cairn__xb_effect(b, decision(r, o, &c, ts), ev);
    }
}

/* sessionEnd checks: the MUST rule, commits in changesCommitted, tests. */
static void session_end(jr *r, const cJSON *se)
{
    static const char *const DONE[] = {"done", "complete", "completed", "pass", "passed", "yes",
        "true", "ok", NULL};
    const cJSON *it;
    cJSON_ArrayForEach(it, obj(se)) {
        const cJSON *c = get(it, "complete");
        const char *lv = str(it, "level"), *ev = str(it, "evidence"), *st = str(it, "status");
        int done = cJSON_IsTrue(c), na = ev != NULL && cairn__x_na(ev, strlen(ev));
        if (!cJSON_IsObject(it) || it->string == NULL)
            continue;
        if (st != NULL)
            for (size_t i = 0; DONE[i] != NULL; i++)
                done |= strlen(st) == strlen(DONE[i]) && cairn__x_word(st, strlen(st), DONE[i]);
        if (lv != NULL && strlen(lv) == 4 && cairn__x_word(lv, 4, "must") && !done && !na)
            r->b->open_must++;
        if (ev == NULL)
            continue;
        if (has_sub(it->string, "commit"))
            cairn__xb_commits(r->b, ev, strlen(ev), NULL, -1, NULL);
        else if (done && !na && (has_sub(it->string, "validat") || has_sub(it->string, "test") ||
                                 has_sub(it->string, "qa"))) {
            xtext t;
            cairn__xt_init(&t);
            cairn__xt_put(&t, it->string, strlen(it->string));
            cairn__xt_puts(&t, ": ");
            cairn__xt_md(&t, ev, strlen(ev));
            cairn__xb_event(r->b, "test", &t, NULL);
        }
    }
}

static void status_of(xb *b, const cJSON *o)
{
    static const char *const K[] = {"status", "outcome", NULL};
    for (size_t i = 0; K[i] != NULL; i++) {
        const char *s = str(o, K[i]);
        int v = s != NULL ? cairn__x_status(s, strlen(s)) : X_NONE;
        if (v > b->status)
            b->status = v;
    }
}

static void commits_of(jr *r, const cJSON *v)
{
    static const char *const SHA[] = {"sha", "hash", "commit", "id", NULL};
    static const char *const MSG[] = {"message", "subject", "summary", "title", NULL};
    const cJSON *it;
    cJSON_ArrayForEach(it, arr(v)) {
        const cJSON *h = cJSON_IsObject(it) ? first(it, SHA, NULL) : it;
        xtext t;
        cairn__xt_init(&t);
        if (cJSON_IsObject(it))
            jtext(&t, first(it, MSG, NULL));
        if (cJSON_IsString(h))
            cairn__xb_commits(r->b, h->valuestring, strlen(h->valuestring), &t, r->prev, NULL);
    }
}

static void walk(jr *r, const cJSON *root)
{
    static const char *const OBJ[] = {"objective", "task", "title", "goal", NULL};
    static const char *const LES[] = {"learnings", "lessons", "lessonsLearned", "keyLearnings",
        "insights", NULL};
    static const char *const NEXT[] = {"nextSteps", "next_steps", "followUps", "followUp", NULL};
    static const char *const SESSION_DATE[] = {"date",       "timestamp",  "startTime",
                                               "start_time", "startedAt",  "started_at",
                                               "started",    "start",      NULL};
    xb *b = r->b;
    const cJSON *sess = get(root, "session"), *v, *it, *m;
    const char *s;
    xtext t;

    if (!cJSON_IsObject(sess))
        sess = root;
    /* the date first: every event takes it; the first of these members,
     * in the session object and then at the top, that holds a time */
    for (size_t k = 0; SESSION_DATE[k] != NULL; k++) {
        char ts[21];
        int timed;
        long long ep;
        if (((s = str(sess, SESSION_DATE[k])) != NULL || (s = str(root, SESSION_DATE[k])) != NULL) &&
            cairn__x_ts(s, strlen(s), ts, &timed, &ep)) {
            memcpy(b->ts, ts, sizeof ts);
            break;
        }
    }
    if ((v = get(sess, "number")) != NULL && cJSON_IsNumber(v) && v->valuedouble >= 0 &&
        v->valuedouble < 1e9)
        b->number = (long)v->valuedouble;
    if (((v = first(sess, OBJ, NULL)) != NULL || (v = first(root, OBJ, NULL)) != NULL) &&
        cJSON_IsString(v) && strncmp(v->valuestring, "[Migrated", 9) != 0)
        jtext(&b->task, v);
    if ((s = str(sess, "startingCommit")) != NULL || (s = str(root, "startingCommit")) != NULL)
        cairn__xb_start_commit(b, s, strlen(s));
    status_of(b, root);
    if (sess != root)
        status_of(b, sess);
    status_of(b, get(root, "sessionEnd"));

    v = get(root, "workLog");
    cJSON_ArrayForEach(it, arr(v))
        work_item(r, it);
    session_end(r, get(get(root, "protocolCompliance"), "sessionEnd"));
    /* deliverables */
    v = get(get(root, "outcomes"), "deliverables");
    cJSON_ArrayForEach(it, arr(v)) {
        cairn__xt_init(&t);
        cairn__xt_puts(&t, "Deliverable: ");
        jtext(&t, cJSON_IsObject(it) ? get(it, "description") : it);
        if ((s = str(it, "path")) != NULL) {
            cairn__xt_puts(&t, " (");
            cairn__xt_md(&t, s, strlen(s));
            cairn__xt_puts(&t, ")");
        }
        if (t.n > 13)
            chain(r, cairn__xb_event(b, "milestone", &t, NULL));
    }
    v = get(root, "decisions");
    cJSON_ArrayForEach(it, arr(v)) {
        char tsb[21];
        decision(r, it, NULL, item_ts(b, it, tsb) ? tsb : NULL);
    }
    for (size_t i = 0; LES[i] != NULL; i++) {
        lessons_of(b, get(root, LES[i]));
        lessons_of(b, get(get(root, "sessionEnd"), LES[i]));
    }
    commits_of(r, get(get(root, "crossReferences"), "commits"));
    commits_of(r, get(root, "commits"));
    if ((s = str(root, "endingCommit")) != NULL) {
        cairn__xt_init(&t);
        cairn__xt_puts(&t, "ending commit");
        cairn__xb_commits(b, s, strlen(s), &t, r->prev, NULL);
        if (cairn__x_word(s, strlen(s), "pending*") && b->status < X_PARTIAL)
            b->status = X_PARTIAL;
    }
    for (size_t i = 0; NEXT[i] != NULL; i++) {
        v = get(root, NEXT[i]);
        if (cJSON_IsString(v))
            v = NULL; /* a lone string is rare; an array is the schema */
        cJSON_ArrayForEach(it, arr(v)) {
            if (!cJSON_IsString(it) || it->valuestring[0] == 0)
                continue;
            cairn__xt_init(&t);
            cairn__xt_puts(&t, "Next step: ");
            jtext(&t, it);
            cairn__xb_event(b, "handoff", &t, NULL);
        }
    }
    m = get(root, "episodeMetrics");
    if (m == NULL)
        m = get(root, "metrics");
    if (num(m, "filesChanged") >= 0 || num(m, "files_changed") >= 0)
        b->files_changed = num(m, "filesChanged") >= 0 ? num(m, "filesChanged")
                                                       : num(m, "files_changed");
    if (num(m, "durationMinutes") >= 0 || num(m, "duration_minutes") >= 0)
        b->duration = num(m, "durationMinutes") >= 0 ? num(m, "durationMinutes")
                                                     : num(m, "duration_minutes");
    if (num(m, "toolCalls") >= 0 || num(m, "tool_calls") >= 0)
        b->tool_calls = num(m, "toolCalls") >= 0 ? num(m, "toolCalls") : num(m, "tool_calls");
    if (b->files_changed < 0)
        b->files_changed = r->nfiles > 0 ? r->nfiles : r->files_said;
}

int cairn__extract_json(xb *b, const char *p, size_t len, cairn__err *e)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(p, len, &end, 0);
    jr *r;
    size_t off = end != NULL && end >= p && end <= p + len ? (size_t)(end - p) : 0;

    if (root == NULL)
        return cairn__fail(e, CAIRN_EINVAL, "JSON log: does not parse (near byte %zu)", off);
    while (off < len && (p[off] == ' ' || p[off] == '\t' || p[off] == '\r' || p[off] == '\n'))
        off++;
    if (off < len) {
        cJSON_Delete(root);
        return cairn__fail(e, CAIRN_EINVAL, "JSON log: bytes after the object (byte %zu)", off);
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return cairn__fail(e, CAIRN_EINVAL, "JSON log: not an object");
    }
    /* The bytes are checked already; a \u0000 would end a string unseen. */
    if (cairn__utf8_check_json(e, "JSON log: ", NULL, p, len) != CAIRN_OK) {
        cJSON_Delete(root);
        return CAIRN_EINVAL;
    }
    if ((r = calloc(1, sizeof *r)) == NULL) {
        cJSON_Delete(root);
        return cairn__fail(e, CAIRN_ENOMEM, "no memory");
    }
    r->b = b;
    r->prev = -1;
    walk(r, root);
    free(r);
    cJSON_Delete(root);
    return CAIRN_OK;
}
