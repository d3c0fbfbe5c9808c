/*
 * ada.c - `cairn import --from ada DIR`: an ADA agent team's cognitive
 * memory into the tiers (README "Importing an ADA team's memory" has the
 * mapping).
 *
 * bank.md is markdown with fixed headings: "### Active Sprint" becomes
 * sprint (its bullets), each "### <emoji> Role" of "## Role State" the
 * roleState of that role ({"lastAction", "nextAction", "notes"} from its
 * "**Last:**", "**Next:**" and other bullets), the bullets of "### In
 * Progress" and of the "### Active ..." parts of "## Active Threads"
 * threads, those of "### Blockers" blockers, those of "## Key Lessons"
 * lessons. Every other section is named in the report as not taken.
 * stream.jsonl lines are stream entries as they are (ids, cycles and
 * times kept); each history entry of rotation.json with a "reflection"
 * becomes a reflection with the id "rotation-<cycle>-<role>". Everything
 * is keyed (entry ids, values), so a second import adds nothing.
 */
#include "ada.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "tiers.h"

/* ---- the plan ------------------------------------------------------------------ */

static char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

static char *fmt_where(const char *file, size_t line)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s line %zu", file, line);
    return dup_n(buf, strlen(buf));
}

/* Add an op; takes role, value and where (freed on failure). */
static int add_op(ada_plan *p, int kind, const char *section, char *role, char *value, char *where)
{
    if (value == NULL || where == NULL || (p->n == p->cap && cairn__grow(NULL, (void **)&p->ops, &p->cap, p->n + 1, sizeof *p->ops) != CAIRN_OK)) {
        free(role);
        free(value);
        free(where);
        return CAIRN_ENOMEM;
    }
    p->ops[p->n].kind = kind;
    p->ops[p->n].section = section;
    p->ops[p->n].role = role;
    p->ops[p->n].value = value;
    p->ops[p->n].where = where;
    p->n++;
    return CAIRN_OK;
}

static int add_skip(ada_plan *p, char *where, const char *why)
{
    char *w = dup_n(why, strlen(why));
    if (where == NULL || w == NULL ||
        (p->n_skips == p->skip_cap &&
         cairn__grow(NULL, (void **)&p->skips, &p->skip_cap, p->n_skips + 1, sizeof *p->skips) != CAIRN_OK)) {
        free(where);
        free(w);
        return CAIRN_ENOMEM;
    }
    p->skips[p->n_skips].where = where;
    p->skips[p->n_skips].why = w;
    p->n_skips++;
    return CAIRN_OK;
}

void cairn__ada_plan_free(ada_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->ops[i].role);
        free(p->ops[i].value);
        free(p->ops[i].where);
    }
    for (size_t i = 0; i < p->n_skips; i++) {
        free(p->skips[i].where);
        free(p->skips[i].why);
    }
    free(p->ops);
    free(p->skips);
    memset(p, 0, sizeof *p);
}

/* ---- bank.md ----------------------------------------------------------------------- */

/* Where a line of bank.md goes. */
enum { B_NONE, B_SPRINT, B_ROLE, B_THREADS, B_BLOCKERS, B_LESSONS, B_SKIP };

typedef struct bank {
    ada_plan *p;
    int h2;            /* the "## " section: B_ROLE, B_THREADS (Active Threads), B_LESSONS, else B_NONE */
    int target;        /* where bullets go now */
    char role[65];
    size_t role_line;
    char *sprint;      /* the sprint's bullets, "\n"-joined */
    size_t sprint_len, sprint_line;
    cJSON *state;      /* the role's state being read */
    char *heading;     /* the section being skipped */
    size_t heading_line, skipped_lines;
} bank;

/* A heading's text past its '#'s and spaces, without a trailing '\r'. */
static void heading_text(const char *l, size_t n, const char **t, size_t *tn)
{
    size_t i = 0;
    while (i < n && l[i] == '#')
        i++;
    while (i < n && l[i] == ' ')
        i++;
    while (n > i && (l[n - 1] == '\r' || l[n - 1] == ' '))
        n--;
    *t = l + i;
    *tn = n - i;
}

static int starts(const char *t, size_t n, const char *w)
{
    size_t k = strlen(w);
    return n >= k && memcmp(t, w, k) == 0;
}

/* The role of "### 👔 CEO": its letters from the first ASCII letter on,
 * lowercased ("ceo", "qa", "engineering"). */
static void role_name(const char *t, size_t n, char *out, size_t cap)
{
    size_t i = 0, o = 0;
    while (i < n && !((t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= 'a' && t[i] <= 'z')))
        i++;
    for (; i < n && o + 1 < cap; i++) {
        char c = t[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        out[o++] = c == ' ' ? '-' : c;
    }
    out[o] = 0;
}

/* End what the section being read collected: the sprint, a role's state,
 * the note of a skipped section. */
static int bank_flush(bank *b)
{
    int rc = CAIRN_OK;
    if (b->sprint != NULL) {
        rc = add_op(b->p, ADA_CORE_SET, "sprint", NULL, b->sprint, fmt_where("bank.md", b->sprint_line));
        b->sprint = NULL;
        b->sprint_len = 0;
    }
    if (rc == CAIRN_OK && b->state != NULL) {
        char *v = cJSON_GetArraySize(b->state) > 0 ? cJSON_PrintUnformatted(b->state) : NULL;
        if (v != NULL)
            rc = add_op(b->p, ADA_CORE_SET, "roleState", dup_n(b->role, strlen(b->role)), v,
                        fmt_where("bank.md", b->role_line));
        cJSON_Delete(b->state);
        b->state = NULL;
    }
    if (rc == CAIRN_OK && b->heading != NULL) {
        char why[160];
        if (b->skipped_lines > 0) {
            snprintf(why, sizeof why, "section \"%.100s\" (%zu lines): not a core section",
                     b->heading, b->skipped_lines);
            rc = add_skip(b->p, fmt_where("bank.md", b->heading_line), why);
        }
        free(b->heading);
        b->heading = NULL;
    }
    b->skipped_lines = 0;
    return rc;
}

static int bank_heading(bank *b, const char *l, size_t n, size_t line)
{
    const char *t;
    size_t tn;
    int level = n > 2 && l[2] == '#' ? 3 : n > 1 && l[1] == '#' ? 2 : 1;
    int rc = bank_flush(b);
    if (rc != CAIRN_OK)
        return rc;
    heading_text(l, n, &t, &tn);
    if (level == 1) {
        b->h2 = b->target = B_NONE;
    } else if (level == 2) {
        b->h2 = starts(t, tn, "Role State")       ? B_ROLE
                : starts(t, tn, "Active Threads") ? B_THREADS
                : starts(t, tn, "Key Lessons")    ? B_LESSONS
                                                  : B_NONE;
        b->target = b->h2 == B_THREADS || b->h2 == B_ROLE ? B_NONE : b->h2;
    } else if (b->h2 == B_ROLE) {
        b->target = B_ROLE;
        role_name(t, tn, b->role, sizeof b->role);
        b->role_line = line;
        if (b->role[0] == 0 || (b->state = cJSON_CreateObject()) == NULL)
            b->target = B_SKIP;
    } else if (b->h2 == B_THREADS) {
        b->target = starts(t, tn, "Active") ? B_THREADS : B_SKIP;
    } else if (starts(t, tn, "Active Sprint")) {
        b->target = B_SPRINT;
        b->sprint_line = line;
    } else if (starts(t, tn, "In Progress")) {
        b->target = B_THREADS;
    } else if (starts(t, tn, "Blockers")) {
        b->target = B_BLOCKERS;
    } else {
        b->target = B_SKIP;
    }
    if (b->target == B_SKIP || b->target == B_NONE) {
        b->heading = dup_n(t, tn);
        b->heading_line = line;
        if (b->heading == NULL)
            return CAIRN_ENOMEM;
    }
    return CAIRN_OK;
}

/* "**Last:** text" -> "lastAction"; NULL if the bullet is no such field. */
static const char *role_field(const char **t, size_t *n)
{
    static const struct {
        const char *prefix, *key;
    } f[] = {{"**Last:**", "lastAction"}, {"**Next:**", "nextAction"},
             {"**Working on:**", "workingOn"}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (starts(*t, *n, f[i].prefix)) {
            size_t k = strlen(f[i].prefix);
            *t += k;
            *n -= k;
            while (*n > 0 && **t == ' ')
                (*t)++, (*n)--;
            return f[i].key;
        }
    return NULL;
}

static int bank_bullet(bank *b, const char *t, size_t n, size_t line)
{
    static const char *const section[] = {NULL, NULL, NULL, "threads", "blockers", "lessons"};
    char *v;
    if (n == 0)
        return CAIRN_OK;
    switch (b->target) {
    case B_SPRINT: {
        char *p = realloc(b->sprint, b->sprint_len + n + 2);
        if (p == NULL)
            return CAIRN_ENOMEM;
        if (b->sprint_len > 0)
            p[b->sprint_len++] = '\n';
        memcpy(p + b->sprint_len, t, n);
        b->sprint_len += n;
        p[b->sprint_len] = 0;
        b->sprint = p;
        return CAIRN_OK;
    }
    case B_ROLE: {
        const char *key = role_field(&t, &n);
        if ((v = dup_n(t, n)) == NULL)
            return CAIRN_ENOMEM;
        if (key != NULL) {
            cJSON_DeleteItemFromObjectCaseSensitive(b->state, key);
            cJSON_AddStringToObject(b->state, key, v);
        } else {
            cJSON *notes = cJSON_GetObjectItemCaseSensitive(b->state, "notes");
            if (notes == NULL)
                notes = cJSON_AddArrayToObject(b->state, "notes");
            cJSON_AddItemToArray(notes, cJSON_CreateString(v));
        }
        free(v);
        return CAIRN_OK;
    }
    case B_THREADS:
    case B_BLOCKERS:
    case B_LESSONS:
        return add_op(b->p, ADA_CORE_APPEND, section[b->target], NULL, dup_n(t, n),
                      fmt_where("bank.md", line));
    default:
        b->skipped_lines++;
        return CAIRN_OK;
    }
}

static int plan_bank(ada_plan *p, const char *s, size_t len)
{
    bank b;
    size_t line = 0, i = 0;
    int rc = CAIRN_OK;
    memset(&b, 0, sizeof b);
    b.p = p;
    while (rc == CAIRN_OK && i < len) {
        const char *l = s + i;
        const char *nl = memchr(l, '\n', len - i);
        size_t n = nl ? (size_t)(nl - l) : len - i, k = 0;
        i += n + (nl != NULL);
        line++;
        while (n > 0 && l[n - 1] == '\r')
            n--;
        if (n > 0 && l[0] == '#') {
            rc = bank_heading(&b, l, n, line);
            continue;
        }
        while (k < n && l[k] == ' ')
            k++;
        if (k == n || (n - k == 3 && memcmp(l + k, "---", 3) == 0))
            continue; /* blank, or a rule */
        if (k + 1 < n && (l[k] == '-' || l[k] == '*') && l[k + 1] == ' ')
            rc = bank_bullet(&b, l + k + 2, n - k - 2, line);
        else if (b.target == B_SKIP || b.target == B_NONE)
            b.skipped_lines++;
        else /* text of a section that is taken, not a bullet: said */
            rc = add_skip(p, fmt_where("bank.md", line), "not a bullet of a core section");
        if (rc == CAIRN_OK && b.heading == NULL && (b.target == B_SKIP || b.target == B_NONE) &&
            b.skipped_lines == 1) {
            /* text before any heading, or under a level-1 title */
            b.heading = dup_n("(no heading)", 12);
            b.heading_line = line;
            rc = b.heading ? CAIRN_OK : CAIRN_ENOMEM;
        }
    }
    if (rc == CAIRN_OK)
        rc = bank_flush(&b);
    free(b.sprint);
    cJSON_Delete(b.state);
    free(b.heading);
    return rc;
}

/* ---- stream.jsonl, rotation.json ---------------------------------------------- */

static int plan_stream(ada_plan *p, const char *s, size_t len)
{
    size_t line = 0, i = 0;
    int rc = CAIRN_OK;
    while (rc == CAIRN_OK && i < len) {
        const char *l = s + i;
        const char *nl = memchr(l, '\n', len - i);
        size_t n = nl ? (size_t)(nl - l) : len - i, k = 0;
        i += n + (nl != NULL);
        line++;
        while (k < n && (l[k] == ' ' || l[k] == '\t' || l[k] == '\r'))
            k++;
        if (k < n)
            rc = add_op(p, ADA_STREAM, NULL, NULL, dup_n(l, n), fmt_where("stream.jsonl", line));
    }
    return rc;
}

static int plan_rotation(ada_plan *p, const char *s, size_t len)
{
    cJSON *doc = cJSON_ParseWithLength(s, len), *h, *e;
    size_t k = 0;
    int rc = CAIRN_OK;
    if (doc == NULL || !cJSON_IsArray(h = cJSON_GetObjectItemCaseSensitive(doc, "history"))) {
        cJSON_Delete(doc);
        return add_skip(p, dup_n("rotation.json", 13),
                        "not a JSON object with a \"history\" array: no reflections taken");
    }
    {
        /* the rotation's own state (whose turn it is) is no tier's */
        char keys[200] = "";
        cJSON_ArrayForEach(e, doc)
            if (e->string != NULL && strcmp(e->string, "history") != 0 &&
                strlen(keys) + strlen(e->string) + 3 < sizeof keys)
                snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%s",
                         keys[0] ? ", " : "", e->string);
        if (keys[0] != 0) {
            char why[260];
            snprintf(why, sizeof why, "the rotation's state (%s): not kept", keys);
            if ((rc = add_skip(p, dup_n("rotation.json", 13), why)) != CAIRN_OK) {
                cJSON_Delete(doc);
                return rc;
            }
        }
    }
    cJSON_ArrayForEach(e, h) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "reflection");
        const cJSON *cyc = cJSON_GetObjectItemCaseSensitive(e, "cycle");
        const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "role"));
        const char *ts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "timestamp"));
        const char *act = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "action"));
        const char *worked = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "whatWorked"));
        const char *outcome = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "outcome"));
        char where[64], id[160];
        cJSON *o;
        char *v;
        snprintf(where, sizeof where, "rotation.json history[%zu]", k++);
        if (!cJSON_IsObject(r) || !cJSON_IsNumber(cyc) || (worked == NULL && act == NULL)) {
            rc = add_skip(p, dup_n(where, strlen(where)),
                          cJSON_IsObject(r) ? "a reflection without a cycle or any text"
                                            : "no reflection in it");
            if (rc != CAIRN_OK)
                break;
            continue;
        }
        snprintf(id, sizeof id, "rotation-%.0f-%.100s", cyc->valuedouble, role ? role : "");
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddNumberToObject(o, "cycle", cyc->valuedouble);
        cJSON_AddStringToObject(o, "content", worked ? worked : act);
        if (role != NULL && role[0] != 0)
            cJSON_AddStringToObject(o, "role", role);
        if (outcome != NULL && outcome[0] != 0)
            cJSON_AddStringToObject(o, "outcome", outcome);
        if (worked != NULL && act != NULL)
            cJSON_AddStringToObject(o, "whatWorked", act); /* the action it reflects on */
        if (ts != NULL)
            cJSON_AddStringToObject(o, "timestamp", ts);
        v = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if ((rc = add_op(p, ADA_REFLECT, NULL, NULL, v, dup_n(where, strlen(where)))) != CAIRN_OK)
            break;
    }
    cJSON_Delete(doc);
    return rc;
}

int cairn__ada_plan(const char *bank_md, size_t bank_len, const char *stream, size_t stream_len,
                    const char *rotation, size_t rotation_len, ada_plan *out)
{
    int rc = CAIRN_OK;
    memset(out, 0, sizeof *out);
    if (bank_md != NULL)
        rc = plan_bank(out, bank_md, bank_len);
    if (rc == CAIRN_OK && stream != NULL)
        rc = plan_stream(out, stream, stream_len);
    if (rc == CAIRN_OK && rotation != NULL)
        rc = plan_rotation(out, rotation, rotation_len);
    if (rc != CAIRN_OK)
        cairn__ada_plan_free(out);
    return rc;
}

/* ---- applying it ---------------------------------------------------------------------- */

/* An error that skips the one value (bad input), not the import. */
static int skippable(int rc)
{
    return rc == CAIRN_EQUERY || rc == CAIRN_EINVAL || rc == CAIRN_EEXIST;
}

static int json_true(const char *out, const char *key)
{
    cJSON *o = cJSON_Parse(out);
    int t = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
    cJSON_Delete(o);
    return t;
}

int cairn_tiers_import_ada(cairn_mem *m, const char *scope, const char *bank_md, size_t bank_len,
                           const char *stream_jsonl, size_t stream_len, const char *rotation_json,
                           size_t rotation_len, char **report_json)
{
    ada_plan p;
    tier_scope sc;
    uint64_t core_new = 0, core_same = 0, st_new = 0, st_same = 0, rf_new = 0, rf_same = 0;
    cJSON *rep, *o, *skipped;
    int rc;

    *report_json = NULL;
    if ((rc = cairn__tier_scope(m, scope, &sc)) != CAIRN_OK)
        return rc;
    if (cairn__ada_plan(bank_md, bank_len, stream_jsonl, stream_len, rotation_json, rotation_len, &p) != CAIRN_OK)
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    if ((rep = cJSON_CreateObject()) == NULL) {
        cairn__ada_plan_free(&p);
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    }
    skipped = cJSON_CreateArray();
    for (size_t i = 0; i < p.n; i++) {
        ada_op *op = &p.ops[i];
        char *out = NULL;
        int same = 0;
        switch (op->kind) {
        case ADA_CORE_SET:
            rc = cairn_core_set(m, sc.name, op->section, op->role, op->value, &out);
            same = rc == CAIRN_OK && !json_true(out, "changed");
            break;
        case ADA_CORE_APPEND:
            rc = cairn_core_append(m, sc.name, op->section, op->value, &out);
            same = rc == CAIRN_OK && json_true(out, "existed");
            break;
        case ADA_STREAM:
            rc = cairn_stream_add(m, sc.name, op->value, &out);
            same = rc == CAIRN_OK && json_true(out, "existed");
            break;
        default:
            rc = cairn_reflection_add(m, sc.name, op->value, &out);
            same = rc == CAIRN_OK && json_true(out, "existed");
            break;
        }
        cairn_free(out);
        if (rc != CAIRN_OK && !skippable(rc))
            break; /* the store failed: what is imported stays */
        if (rc != CAIRN_OK) {
            cJSON *s = cJSON_CreateObject();
            cJSON_AddStringToObject(s, "where", op->where);
            cJSON_AddStringToObject(s, "why", cairn_mem_errmsg(m));
            cJSON_AddItemToArray(skipped, s);
            rc = CAIRN_OK;
            continue;
        }
        if (op->kind <= ADA_CORE_APPEND)
            same ? core_same++ : core_new++;
        else if (op->kind == ADA_STREAM)
            same ? st_same++ : st_new++;
        else
            same ? rf_same++ : rf_new++;
    }
    for (size_t i = 0; i < p.n_skips; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "where", p.skips[i].where);
        cJSON_AddStringToObject(s, "why", p.skips[i].why);
        cJSON_AddItemToArray(skipped, s);
    }
    cairn__ada_plan_free(&p);
    o = cJSON_AddObjectToObject(rep, "core");
    cJSON_AddNumberToObject(o, "changed", (double)core_new);
    cJSON_AddNumberToObject(o, "unchanged", (double)core_same);
    o = cJSON_AddObjectToObject(rep, "stream");
    cJSON_AddNumberToObject(o, "added", (double)st_new);
    cJSON_AddNumberToObject(o, "existed", (double)st_same);
    o = cJSON_AddObjectToObject(rep, "reflections");
    cJSON_AddNumberToObject(o, "added", (double)rf_new);
    cJSON_AddNumberToObject(o, "existed", (double)rf_same);
    cJSON_AddItemToObject(rep, "skipped", skipped);
    if (rc != CAIRN_OK) {
        /* the report of what was done goes with the error */
        char *msg = cJSON_PrintUnformatted(rep);
        cJSON_Delete(rep);
        *report_json = msg;
        return rc;
    }
    return cairn__tier_emit(m, rep, report_json);
}
