/*
 * exchange.c - export and import of memories as JSON, Markdown and CSV.
 *
 * All three formats are turned into the same thing on import: one cJSON
 * object per memory with Engram's field names, which is then checked by
 * the memory record decoder (memrec.c: the one definition of a valid
 * memory) before anything is written. Formats (README "Export and import"):
 *
 *   json  [{"id":..,"content":..,"category":..,"importance":..,"createdAt":..,
 *           "accessedAt":..,"accessCount":..,"expiresAt":..|null,
 *           "metadata":{..},"namespace":..}, ...]
 *   md    # Memories
 *         (blank line)
 *         ## <id>
 *         - namespace: ""             every value is JSON, on one line
 *         - category: "fact"
 *         - importance: 0.5  ...  - metadata: {}
 *         (blank line)
 *         <the content, verbatim>
 *   csv   id,namespace,category,importance,createdAt,accessedAt,accessCount,
 *         expiresAt,metadata,content   (RFC 4180; strings bare, the rest
 *         JSON; an empty expiresAt is none)
 *
 * Markdown content runs to the next "## " line. Content that could not come
 * back verbatim that way (it has a line starting with "## ", or starts or
 * ends with a line break) is written instead as a JSON string in a
 * "- content:" field line, so every export imports back exactly.
 *
 * Before any of that, the input follows the rule for text (utf8.h): its
 * bytes are checked whole, and every JSON text in it for \u0000, so a NUL
 * never silently ends a string (cJSON and every C string would cut there);
 * the message names the memory, the field and, for csv and md, the row or
 * line.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "alloc.h"
#include "cairn.h"
#include "memstate.h"
#include "memvec.h"
#include "utf8.h"

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void sput(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *p;
        while (cap < b->len + n + 1)
            cap *= 2;
        p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sputs(sbuf *b, const char *s)
{
    sput(b, s, strlen(s));
}

/* One memory as a cJSON object with Engram's names. */
/* x's vector as "embedder" and "embedding" (json export only). */
static int add_embedding(cairn_mem *m, const ment *x, cJSON *o)
{
    const float *row = NULL;
    cJSON *a;
    int rc = cairn__mem_vec_get(m, x->nsi, x->seq, &row);
    if (rc != CAIRN_OK || row == NULL)
        return rc;
    if (cJSON_AddStringToObject(o, "embedder", m->vname) == NULL ||
        (a = cJSON_AddArrayToObject(o, "embedding")) == NULL)
        return CAIRN_ENOMEM;
    for (uint32_t d = 0; d < m->vdim; d++) {
        cJSON *v = cJSON_CreateNumber((double)row[d]);
        if (v == NULL || !cJSON_AddItemToArray(a, v))
            return CAIRN_ENOMEM;
    }
    return CAIRN_OK;
}

static cJSON *to_json(const cairn_mem *m, const ment *x, const char *text)
{
    cJSON *o = cJSON_CreateObject(), *meta = cJSON_Parse(x->metadata ? x->metadata : "{}");
    if (o == NULL || meta == NULL) {
        cJSON_Delete(o);
        cJSON_Delete(meta);
        return NULL;
    }
    cJSON_AddStringToObject(o, "id", x->id);
    cJSON_AddStringToObject(o, "content", text);
    cJSON_AddStringToObject(o, "category", x->category);
    cJSON_AddNumberToObject(o, "importance", x->importance);
    cairn__json_add_int(o, "createdAt", x->created);
    /* with the accesses ACCESS holds that no record has folded yet */
    cairn__json_add_int(o, "accessedAt", cairn__access_last(m, x));
    cairn__json_add_int(o, "accessCount", (int64_t)cairn__access_count(m, x));
    if (x->expires)
        cairn__json_add_int(o, "expiresAt", x->expires);
    else
        cJSON_AddNullToObject(o, "expiresAt");
    cJSON_AddItemToObject(o, "metadata", meta);
    cJSON_AddStringToObject(o, "namespace", m->ns[x->nsi].name);
    return o;
}

static const char *const fields[] = {"id", "namespace", "category", "importance", "createdAt",
                                     "accessedAt", "accessCount", "expiresAt", "metadata"};
#define NFIELDS (sizeof fields / sizeof fields[0])

static void csv_field(sbuf *b, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        sputs(b, s);
        return;
    }
    sputs(b, "\"");
    for (; *s; s++) {
        if (*s == '"')
            sputs(b, "\""); /* a quote is doubled */
        sput(b, s, 1);
    }
    sputs(b, "\"");
}

/* The integer fields of an imported memory as their exact digits, before
 * the object is printed for the decoder: cJSON would print a time above
 * ~2^50 rounded. (Anything else is left for the decoder to judge.) */
static void exact_ints(cJSON *o)
{
    static const char *const names[] = {"createdAt", "accessedAt", "accessCount", "expiresAt"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(o, names[i]), *raw;
        char d[24];
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9007199254740992.0 ||
            v->valuedouble != floor(v->valuedouble))
            continue;
        snprintf(d, sizeof d, "%lld", (long long)v->valuedouble);
        raw = cJSON_CreateRaw(d);
        if (raw != NULL)
            cJSON_ReplaceItemInObjectCaseSensitive(o, names[i], raw);
    }
}

/* A field's value as text: strings bare for csv, JSON otherwise. */
static char *value_text(const cJSON *o, const char *name, int bare_strings)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (v == NULL || cJSON_IsNull(v))
        return strdup(bare_strings ? "" : "null");
    if (bare_strings && cJSON_IsString(v))
        return strdup(v->valuestring);
    return cJSON_PrintUnformatted(v);
}

int cairn__mem_scan(cairn_mem *m, const char *const *ns, size_t n_ns, uint64_t from_seq,
                    int (*fn)(void *user, cairn_mem *m, const ment *x), void *user)
{
    int64_t now = cairn__mem_now(m);
    uint8_t *want = NULL; /* by namespace number: listed */
    size_t first = 0, total;
    int rc;

    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    rc = cairn__mem_catch_up(m);
    if (rc == CAIRN_OK && ns != NULL) {
        if ((want = calloc(m->nns ? m->nns : 1, 1)) == NULL)
            rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        for (size_t i = 0; i < n_ns && rc == CAIRN_OK; i++) {
            long nsi = ns[i] ? cairn__mem_ns_index(m, ns[i], strlen(ns[i]), 0) : -1;
            if (nsi >= 0)
                want[nsi] = 1;
        }
    }
    if (rc == CAIRN_OK)
        cairn__access_refresh(m);
    total = cairn__mem_total(m);
    if (rc == CAIRN_OK && from_seq > 1) { /* the entries are in seq order */
        size_t hi = total;
        while (first < hi) {
            size_t mid = first + (hi - first) / 2;
            if (cairn__mem_seq_at(m, mid) < from_seq)
                first = mid + 1;
            else
                hi = mid;
        }
    }
    /* rows of the index files are read as the walk reaches them: a walk
     * from a seq costs what lies after it */
    for (size_t i = first; i < total && rc == CAIRN_OK; i++) {
        const ment *x = cairn__mem_at_loaded(m, i);
        if (x == NULL) {
            rc = CAIRN_ECORRUPT; /* cairn__errbuf(m) names the file */
            break;
        }
        if (!x->live || cairn__mem_expired(x, now) || (want != NULL && !want[x->nsi]))
            continue;
        rc = fn(user, m, x);
    }
    free(want);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

typedef struct each_ctx {
    int (*fn)(void *user, cairn_memory *mem);
    void *user;
} each_ctx;

static int each_one(void *user, cairn_mem *m, const ment *x)
{
    each_ctx *e = user;
    cairn_memory *c = malloc(sizeof *c);
    int rc;
    if (c == NULL)
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    if ((rc = cairn__mem_copy_out(m, x, c)) != CAIRN_OK) {
        free(c);
        return rc;
    }
    return e->fn(e->user, c);
}

int cairn_mem_each(cairn_mem *m, const char *const *ns, size_t n_ns,
                   int (*fn)(void *user, cairn_memory *mem), void *user)
{
    each_ctx e = {fn, user};
    return cairn__mem_scan(m, ns, n_ns, 0, each_one, &e);
}

int cairn_mem_export(cairn_mem *m, cairn_mem_format f, char **out, size_t *len)
{
    int64_t now = cairn__mem_now(m);
    sbuf b = {NULL, 0, 0, 0};
    cJSON *arr = NULL;
    int rc = CAIRN_OK;

    *out = NULL;
    *len = 0;
    if ((unsigned)f > CAIRN_MEM_JSONL)
        return CAIRN_EINVAL;
    pthread_mutex_lock(&m->mu);
    if ((rc = cairn__mem_catch_up(m)) != CAIRN_OK) {
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    cairn__access_refresh(m);
    if (f == CAIRN_MEM_JSON)
        arr = cJSON_CreateArray();
    else if (f == CAIRN_MEM_MD)
        sputs(&b, "# Memories\n");
    else if (f == CAIRN_MEM_CSV) {
        for (size_t i = 0; i < NFIELDS; i++) {
            sputs(&b, fields[i]);
            sputs(&b, ",");
        }
        sputs(&b, "content\r\n");
    }
    if (rc == CAIRN_OK)
        rc = cairn__mem_read_all(m);
    for (size_t i = 0; i < cairn__mem_total(m) && rc == CAIRN_OK; i++) {
        const ment *x = cairn__mem_at(m, i);
        const char *text;
        cJSON *o;
        if (!x->live || cairn__mem_expired(x, now))
            continue;
        /* read in seq order: the rows of a file share their log blocks */
        if ((rc = cairn__mem_text(m, x, &text)) != CAIRN_OK)
            break;
        o = to_json(m, x, text);
        if (o == NULL) {
            rc = CAIRN_ENOMEM;
            break;
        }
        if (f == CAIRN_MEM_JSON) {
            cJSON_AddItemToArray(arr, o);
            if ((rc = add_embedding(m, x, o)) != CAIRN_OK)
                break;
            continue;
        }
        if (f == CAIRN_MEM_JSONL) { /* one object a line: a string holds no raw newline */
            char *t = NULL;
            if ((rc = add_embedding(m, x, o)) == CAIRN_OK && (t = cJSON_PrintUnformatted(o)) == NULL)
                rc = CAIRN_ENOMEM;
            if (t != NULL) {
                sputs(&b, t);
                sputs(&b, "\n");
            }
            free(t);
            cJSON_Delete(o);
            if (rc != CAIRN_OK)
                break;
            continue;
        }
        if (f == CAIRN_MEM_MD) {
            sputs(&b, "\n## ");
            sputs(&b, x->id);
            sputs(&b, "\n");
            for (size_t k = 1; k < NFIELDS; k++) {
                char *t = value_text(o, fields[k], 0);
                sputs(&b, "- ");
                sputs(&b, fields[k]);
                sputs(&b, ": ");
                sputs(&b, t ? t : "null");
                sputs(&b, "\n");
                free(t);
            }
            if (strstr(text, "\n## ") != NULL || strncmp(text, "## ", 3) == 0 ||
                text[0] == '\n' || text[x->content_len - 1] == '\n' ||
                text[x->content_len - 1] == '\r') {
                /* not representable verbatim: a JSON string instead */
                char *t = value_text(o, "content", 0);
                sputs(&b, "- content: ");
                sputs(&b, t ? t : "\"\"");
                sputs(&b, "\n");
                free(t);
            } else {
                sputs(&b, "\n");
                sputs(&b, text);
                sputs(&b, "\n");
            }
        } else {
            for (size_t k = 0; k < NFIELDS; k++) {
                char *t = value_text(o, fields[k], 1);
                csv_field(&b, t ? t : "");
                sputs(&b, ",");
                free(t);
            }
            csv_field(&b, text);
            sputs(&b, "\r\n");
        }
        cJSON_Delete(o);
    }
    pthread_mutex_unlock(&m->mu);
    if (f == CAIRN_MEM_JSON && rc == CAIRN_OK) {
        char *s = arr ? cJSON_Print(arr) : NULL;
        if (s == NULL)
            rc = CAIRN_ENOMEM;
        else
            sputs(&b, s);
        free(s);
    }
    cJSON_Delete(arr);
    if (rc == CAIRN_OK && b.oom)
        rc = CAIRN_ENOMEM;
    if (rc != CAIRN_OK) {
        free(b.p);
        return rc;
    }
    *out = b.p ? b.p : strdup("");
    *len = b.len;
    return *out ? CAIRN_OK : CAIRN_ENOMEM;
}

/* ---- import: every format to an array of cJSON objects ------------------- */

/* Parse one RFC 4180 record from *p; fills up to max fields (strdup'd),
 * and where each starts in the input into at[] (may be NULL). Returns the
 * number of fields, -1 at a malformed quote, -2 no memory; on an error
 * nothing is left allocated. */
static int csv_record(const char **p, const char *end, char **f, const char **at, int max)
{
    int n = 0, err = 0;
    const char *s = *p;
    for (;;) {
        sbuf b = {NULL, 0, 0, 0};
        if (at != NULL && n < max)
            at[n] = s;
        if (s < end && *s == '"') {
            s++;
            for (;;) {
                if (s >= end) {
                    err = -1; /* unterminated */
                    break;
                }
                if (*s == '"') {
                    if (s + 1 < end && s[1] == '"') {
                        sput(&b, "\"", 1);
                        s += 2;
                        continue;
                    }
                    s++;
                    break;
                }
                sput(&b, s, 1);
                s++;
            }
            if (err == 0 && s < end && *s != ',' && *s != '\r' && *s != '\n')
                err = -1;
        } else {
            const char *t = s;
            while (t < end && *t != ',' && *t != '\r' && *t != '\n' && err == 0)
                err = *t++ == '"' ? -1 : 0;
            sput(&b, s, (size_t)(t - s));
            s = t;
        }
        if (err == 0 && (b.oom || (b.p == NULL && (b.p = strdup("")) == NULL)))
            err = -2;
        if (err != 0) {
            free(b.p);
            for (int i = 0; i < n && i < max; i++)
                free(f[i]);
            return err;
        }
        if (n < max)
            f[n] = b.p;
        else
            free(b.p);
        n++;
        if (s < end && *s == ',') {
            s++;
            continue;
        }
        if (s < end && *s == '\r')
            s++;
        if (s < end && *s == '\n')
            s++;
        *p = s;
        return n;
    }
}

/* A csv or md value (text) into o as field `name`: numbers and objects are
 * JSON; strings bare in csv, JSON in md. Returns 0, -1 if it is not valid
 * JSON, -2 if it breaks the rule for text (a \u0000 in a string; e says
 * where). The input's bytes were checked whole before. */
static int put_value(cJSON *o, const char *name, const char *text, int bare_strings, cairn__err *e)
{
    cJSON *v;
    char what[64];
    int is_string = strcmp(name, "id") == 0 || strcmp(name, "namespace") == 0 ||
                    strcmp(name, "category") == 0 || strcmp(name, "content") == 0;
    if (is_string && bare_strings) {
        v = cJSON_CreateString(text);
    } else if (bare_strings && text[0] == 0) {
        v = cJSON_CreateNull();
    } else {
        snprintf(what, sizeof what, "%.40s: ", name);
        if (cairn__utf8_check_json(e, what, NULL, text, strlen(text)) != CAIRN_OK)
            return -2;
        v = cJSON_Parse(text);
    }
    if (v == NULL)
        return -1;
    cJSON_AddItemToObject(o, name, v);
    return 0;
}

/* What a bad byte is, in a message. */
static const char *bad_what(int nul)
{
    return nul ? "holds a NUL byte" : "is not valid UTF-8";
}

static int from_csv(cairn_mem *m, const char *data, size_t len, cJSON **out)
{
    const char *p = data, *end = data + len, *at[NFIELDS + 1];
    char *f[NFIELDS + 1];
    cJSON *arr = cJSON_CreateArray();
    cairn__err e;
    int n, row = 1, nul;
    /* the first byte that breaks the rule for text, found in its row below */
    size_t bad = cairn__utf8_bad(data, len, &nul);

    if (arr == NULL)
        return CAIRN_ENOMEM;
    n = csv_record(&p, end, f, NULL, (int)NFIELDS + 1);
    if (n == -2) {
        cJSON_Delete(arr);
        return CAIRN_ENOMEM;
    }
    {
        int same = n == (int)NFIELDS + 1 && bad >= (size_t)(p - data);
        for (int i = 0; i < n && i <= (int)NFIELDS; i++) {
            same &= strcmp(f[i], i < (int)NFIELDS ? fields[i] : "content") == 0;
            free(f[i]);
        }
        n = same ? n : -1;
    }
    if (n != (int)NFIELDS + 1) {
        cJSON_Delete(arr);
        return cairn__mem_fail(m, CAIRN_EINVAL, "csv: the header must be %s,...,content",
                               fields[0]);
    }
    while (p < end) {
        cJSON *o;
        row++;
        n = csv_record(&p, end, f, at, (int)NFIELDS + 1);
        if (n == -2) {
            cJSON_Delete(arr);
            return CAIRN_ENOMEM;
        }
        /* before the blank-line test: a NUL would make a line look blank */
        if (n >= 0 && bad < len && data + bad < p) {
            int k = 0, item = cJSON_GetArraySize(arr) + 1;
            while (k + 1 < n && k + 1 <= (int)NFIELDS && at[k + 1] <= data + bad)
                k++;
            for (int i = 0; i < n && i <= (int)NFIELDS; i++)
                free(f[i]);
            cJSON_Delete(arr);
            return cairn__mem_fail(m, CAIRN_EINVAL, "memory %d (csv row %d): %s: %s (byte %zu of "
                                   "the input)", item, row, k < (int)NFIELDS ? fields[k] : "content",
                                   bad_what(nul), bad);
        }
        if (n == 1 && f[0][0] == 0) { /* a blank line */
            free(f[0]);
            continue;
        }
        if (n != (int)NFIELDS + 1) {
            for (int i = 0; i < n && i <= (int)NFIELDS; i++)
                free(f[i]);
            cJSON_Delete(arr);
            return cairn__mem_fail(m, CAIRN_EINVAL, "csv row %d: %s", row,
                                   n < 0 ? "malformed quotes" : "wrong number of fields");
        }
        o = cJSON_CreateObject();
        for (int i = 0; i <= (int)NFIELDS; i++) {
            const char *name = i < (int)NFIELDS ? fields[i] : "content";
            int x = 0;
            if (o != NULL && !(f[i][0] == 0 && strcmp(name, "id") == 0) &&
                (x = put_value(o, name, f[i], 1, &e)) != 0) {
                if (x == -2)
                    cairn__mem_fail(m, CAIRN_EINVAL, "memory %d (csv row %d): %s",
                                    cJSON_GetArraySize(arr) + 1, row, e.msg);
                else
                    cairn__mem_fail(m, CAIRN_EINVAL, "csv row %d: field %s is not valid", row,
                                    name);
                cJSON_Delete(o);
                o = NULL;
            }
            free(f[i]);
        }
        if (o == NULL) {
            cJSON_Delete(arr);
            return CAIRN_EINVAL;
        }
        cJSON_AddItemToArray(arr, o);
    }
    *out = arr;
    return CAIRN_OK;
}

static int from_md(cairn_mem *m, const char *data, size_t len, cJSON **out)
{
    cJSON *arr = cJSON_CreateArray(), *o = NULL;
    char *text = malloc(len + 1), *line, *next;
    sbuf content = {NULL, 0, 0, 0};
    cairn__err e;
    int in_body = 0, lineno = 0, rc = CAIRN_OK, nul;
    /* the first byte that breaks the rule for text, found on its line below
     * (the lines before it split as they should: it is the first NUL) */
    size_t bad = cairn__utf8_bad(data, len, &nul);

    if (arr == NULL || text == NULL) {
        cJSON_Delete(arr);
        free(text);
        return CAIRN_ENOMEM;
    }
    memcpy(text, data, len);
    text[len] = 0;
    for (line = text; line != NULL && rc == CAIRN_OK; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = 0;
        lineno++;
        if (bad < len && (next == NULL || text + bad < next)) {
            int item = cJSON_GetArraySize(arr) + (o != NULL);
            const char *field = "content";
            char *colon;
            if (strncmp(line, "## ", 3) == 0) {
                item++;
                field = "id";
            } else if (!in_body && o != NULL && strncmp(line, "- ", 2) == 0) {
                colon = strstr(line + 2, ": ");
                field = "a field line";
                if (colon != NULL && colon < text + bad && colon - line <= 34) {
                    *colon = 0;
                    field = line + 2;
                }
            }
            if (o == NULL && item == 0) /* before the first section */
                rc = cairn__mem_fail(m, CAIRN_EINVAL, "md line %d: %s (byte %zu of the input)",
                                     lineno, bad_what(nul), bad);
            else
                rc = cairn__mem_fail(m, CAIRN_EINVAL, "memory %d (md line %d): %s: %s (byte %zu "
                                     "of the input)", item, lineno, field, bad_what(nul), bad);
            break;
        }
        if (strncmp(line, "## ", 3) == 0) {
            if (o != NULL) {
                /* the body ends with the newline before the next section */
                while (content.len > 0 && content.p[content.len - 1] == '\n')
                    content.p[--content.len] = 0;
                if (content.len > 0 && !cJSON_HasObjectItem(o, "content"))
                    cJSON_AddStringToObject(o, "content", content.p);
                cJSON_AddItemToArray(arr, o);
            }
            content.len = 0;
            if (content.p)
                content.p[0] = 0;
            o = cJSON_CreateObject();
            if (o == NULL || cJSON_AddStringToObject(o, "id", line + 3) == NULL)
                rc = CAIRN_ENOMEM;
            in_body = 0;
            continue;
        }
        if (o == NULL)
            continue; /* the title and anything before the first section */
        if (!in_body && strncmp(line, "- ", 2) == 0) {
            char *colon = strstr(line + 2, ": ");
            int x = 0;
            if (colon == NULL) {
                rc = cairn__mem_fail(m, CAIRN_EINVAL, "md line %d: expected \"- field: value\"",
                                     lineno);
                break;
            }
            *colon = 0;
            if (cJSON_HasObjectItem(o, line + 2) ||
                (x = put_value(o, line + 2, colon + 2, 0, &e)) == -1)
                rc = cairn__mem_fail(m, CAIRN_EINVAL, "md line %d: field %s is not valid JSON "
                                     "or repeated", lineno, line + 2);
            else if (x == -2)
                rc = cairn__mem_fail(m, CAIRN_EINVAL, "memory %d (md line %d): %s",
                                     cJSON_GetArraySize(arr) + 1, lineno, e.msg);
            continue;
        }
        if (!in_body && line[0] == 0) {
            in_body = 1;
            continue;
        }
        in_body = 1;
        sputs(&content, line);
        sputs(&content, "\n");
    }
    if (rc == CAIRN_OK && o != NULL) {
        while (content.len > 0 && content.p[content.len - 1] == '\n')
            content.p[--content.len] = 0;
        if (content.len > 0 && !cJSON_HasObjectItem(o, "content"))
            cJSON_AddStringToObject(o, "content", content.p);
        cJSON_AddItemToArray(arr, o);
        o = NULL;
    }
    cJSON_Delete(o);
    free(content.p);
    free(text);
    if (rc == CAIRN_OK && content.oom)
        rc = CAIRN_ENOMEM;
    if (rc != CAIRN_OK) {
        cJSON_Delete(arr);
        return rc;
    }
    *out = arr;
    return CAIRN_OK;
}

/* Memory i's "embedding" (with its "embedder"), taken out of o into *vec
 * (malloc'd; NULL without one); every embedding of an import must come
 * from one embedder (*name, *dim: the first one's). */
static int take_embedding(cairn_mem *m, cJSON *o, size_t i, float **vec, char *name,
                          uint32_t *dim)
{
    cJSON *a = cJSON_DetachItemFromObjectCaseSensitive(o, "embedding");
    cJSON *en = cJSON_DetachItemFromObjectCaseSensitive(o, "embedder"), *v;
    size_t k = 0, n;
    int rc = CAIRN_OK;

    *vec = NULL;
    if (a == NULL || cJSON_IsNull(a)) {
        cJSON_Delete(a);
        cJSON_Delete(en);
        return CAIRN_OK;
    }
    n = (size_t)cJSON_GetArraySize(a);
    if (!cJSON_IsArray(a) || n == 0 || n > VEC_DIM_MAX)
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "memory %zu: \"embedding\" is not an array of 1..%u "
                             "numbers", i + 1, VEC_DIM_MAX);
    else if (!cJSON_IsString(en) || en->valuestring[0] == 0 ||
             strlen(en->valuestring) > CAIRN_EMBEDDER_NAME_MAX)
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "memory %zu: an \"embedding\" needs its \"embedder\" "
                             "(1..%d bytes)", i + 1, CAIRN_EMBEDDER_NAME_MAX);
    else if (name[0] != 0 && (strcmp(name, en->valuestring) != 0 || *dim != n))
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "memory %zu: its embedding (\"%s\", %zu values) is "
                             "not of the import's embedder (\"%s\", %u)", i + 1, en->valuestring,
                             n, name, *dim);
    else if ((*vec = malloc(n * sizeof **vec)) == NULL)
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    if (rc != CAIRN_OK)
        n = 0;
    for (v = n ? a->child : NULL; v != NULL; v = v->next) {
        float x = cJSON_IsNumber(v) ? (float)v->valuedouble : NAN;
        if (!isfinite(x)) {
            rc = cairn__mem_fail(m, CAIRN_EINVAL, "memory %zu: embedding value %zu is not a "
                                 "finite number", i + 1, k);
            break;
        }
        (*vec)[k++] = x;
    }
    if (rc == CAIRN_OK && name[0] == 0) {
        strcpy(name, en->valuestring);
        *dim = (uint32_t)n;
    }
    if (rc != CAIRN_OK) {
        free(*vec);
        *vec = NULL;
    }
    cJSON_Delete(a);
    cJSON_Delete(en);
    return rc;
}

/* The memories an import stores: keep[i] = 1 for each that is neither
 * the id of a live memory nor the content of one in its namespace, nor
 * the id or the content (in its namespace) of an earlier memory of the
 * import. (The import is one commit, applied once all of it is appended:
 * the state cannot tell of the earlier ones.) *nkeep counts them. */
static int choose(cairn_mem *m, const memrec *recs, const char *const *nss, size_t n,
                  unsigned char *keep, size_t *nkeep)
{
    size_t cap = 16, *by_id, *by_content;

    *nkeep = 0;
    while (cap < 2 * n)
        cap *= 2;
    by_id = calloc(cap, sizeof *by_id); /* index + 1 of a kept memory; 0 empty */
    by_content = calloc(cap, sizeof *by_content);
    if (by_id == NULL || by_content == NULL) {
        free(by_id);
        free(by_content);
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    }
    for (size_t i = 0; i < n; i++) {
        const memrec *r = &recs[i];
        size_t a = (size_t)XXH3_64bits(r->id, strlen(r->id)) & (cap - 1);
        size_t c = (size_t)XXH3_64bits_withSeed(r->content, r->content_len,
                                                XXH3_64bits(nss[i], strlen(nss[i]))) & (cap - 1);
        int dup = cairn__mem_find_id(m, r->id) != NULL ||
                  cairn__mem_find_dup(m, nss[i], r->content, r->content_len) != NULL;
        for (; !dup && by_id[a] != 0; a = (a + 1) & (cap - 1))
            dup = strcmp(recs[by_id[a] - 1].id, r->id) == 0;
        for (; !dup && by_content[c] != 0; c = (c + 1) & (cap - 1)) {
            size_t j = by_content[c] - 1;
            dup = recs[j].content_len == r->content_len && strcmp(nss[j], nss[i]) == 0 &&
                  memcmp(recs[j].content, r->content, r->content_len) == 0;
        }
        keep[i] = !dup;
        if (dup)
            continue;
        by_id[a] = by_content[c] = i + 1;
        (*nkeep)++;
    }
    free(by_id);
    free(by_content);
    return CAIRN_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The limit of live memories per namespace, applied to an import as a
 * whole: if the memories it would store (keep) take any namespace past
 * it, nothing is stored and the error names the namespace and the
 * setting. The namespaces are sorted to count each one's memories. */
static int check_limit(cairn_mem *m, const char *const *nss, const unsigned char *keep,
                       size_t n, size_t nkeep)
{
    const char *what;
    uint64_t lim = cairn__mem_limit(m, &what);
    const char **sorted;
    size_t k = 0;
    int rc = CAIRN_OK;

    if (lim == 0 || nkeep == 0)
        return CAIRN_OK;
    if ((sorted = malloc(nkeep * sizeof *sorted)) == NULL)
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    for (size_t i = 0; i < n; i++)
        if (keep[i])
            sorted[k++] = nss[i];
    qsort(sorted, k, sizeof *sorted, cmp_str);
    for (size_t i = 0, j; i < k && rc == CAIRN_OK; i = j) {
        long nsi = cairn__mem_ns_index(m, sorted[i], strlen(sorted[i]), 0);
        uint64_t would = nsi >= 0 ? m->ns[nsi].live : 0;
        for (j = i; j < k && strcmp(sorted[j], sorted[i]) == 0; j++)
            would++;
        if (would > lim)
            rc = cairn__mem_limit_fail(m, sorted[i], would, lim, what);
    }
    free(sorted);
    return rc;
}

/* The vectors of the memories an import will store (keep), from one call
 * of the handle's embedder, into *vecs (n x dim, owned by the caller),
 * each record pointing at its row. */
static int embed_imports(cairn_mem *m, memrec *recs, const unsigned char *keep, size_t n,
                         float **vecs)
{
    const char **texts = malloc((n ? n : 1) * sizeof *texts);
    size_t *lens = malloc((n ? n : 1) * sizeof *lens), *which = malloc((n ? n : 1) * sizeof *which);
    size_t k = 0, d = m->emb.dim;
    int rc;

    *vecs = NULL;
    if (texts == NULL || lens == NULL || which == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        goto out;
    }
    if ((rc = cairn__mem_vec_compatible(m, m->emb.name, m->emb.dim)) != CAIRN_OK)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (keep[i] && recs[i].vec == NULL) {
            texts[k] = recs[i].content;
            lens[k] = recs[i].content_len;
            which[k++] = i;
        }
    if (k == 0)
        goto out;
    if ((*vecs = malloc(k * d * sizeof **vecs)) == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        goto out;
    }
    if ((rc = cairn__mem_embed(m, texts, lens, k, *vecs)) != CAIRN_OK)
        goto out;
    for (size_t j = 0; j < k; j++) {
        recs[which[j]].embedder = m->emb.name;
        recs[which[j]].dim = m->emb.dim;
        recs[which[j]].vec = *vecs + j * d;
    }
out:
    free(texts);
    free(lens);
    free(which);
    return rc;
}

/* ---- a JSON array, one element at a time ---------------------------------
 * An import of 100,000 memories held the whole file's cJSON tree (twice
 * the file) and each memory's: it now parses one element at a time, and
 * keeps each memory as its record's text. The splitter only finds where
 * each element ends (strings, escapes, nesting); cJSON parses the element
 * and says whether it is JSON. White space is what cJSON skips (any byte
 * up to 32), a UTF-8 byte order mark may lead, and nothing but white space
 * may follow the array. */

typedef struct jarr {
    const char *p, *end;
    int first;
} jarr;

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (unsigned char)*p <= 32)
        p++;
    return p;
}

/* Open the array in data[0..len): 0, or -1 if it is not one. */
static int jarr_open(jarr *a, const char *data, size_t len)
{
    const char *p = data, *end = data + len;
    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    p = skip_ws(p, end);
    if (p >= end || *p != '[')
        return -1;
    a->p = p + 1;
    a->end = end;
    a->first = 1;
    return 0;
}

/* The end of the element at p (the byte after it), or NULL. */
static const char *element_end(const char *p, const char *end)
{
    int depth = 0;
    if (p < end && *p != '"' && *p != '{' && *p != '[') { /* a number or a literal */
        while (p < end && *p != ',' && *p != ']' && (unsigned char)*p > 32)
            p++;
        return p;
    }
    for (; p < end; p++) {
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\' && ++p >= end)
                    return NULL;
            if (p >= end)
                return NULL;
            if (depth == 0)
                return p + 1;
        } else if (*p == '{' || *p == '[') {
            depth++;
        } else if (*p == '}' || *p == ']') {
            if (--depth == 0)
                return p + 1;
            if (depth < 0)
                return NULL;
        }
    }
    return NULL;
}

/* The next element: 1 (*s, *n), 0 at the array's end, -1 if malformed. */
static int jarr_next(jarr *a, const char **s, size_t *n)
{
    const char *p = skip_ws(a->p, a->end), *e;
    if (p < a->end && *p == ']' && a->first) {
        a->p = skip_ws(p + 1, a->end);
        return a->p == a->end ? 0 : -1;
    }
    if (!a->first) {
        if (p >= a->end)
            return -1;
        if (*p == ']') {
            a->p = skip_ws(p + 1, a->end);
            return a->p == a->end ? 0 : -1;
        }
        if (*p != ',')
            return -1;
        p = skip_ws(p + 1, a->end);
    }
    if ((e = element_end(p, a->end)) == NULL || e == p)
        return -1;
    a->first = 0;
    *s = p;
    *n = (size_t)(e - p);
    a->p = e;
    return 1;
}

/* JSON Lines: each line that is not blank is one element. */
static int jlines_next(jarr *a, const char **s, size_t *n)
{
    for (;;) {
        const char *p = a->p, *nl, *e;
        if (p >= a->end)
            return 0;
        nl = memchr(p, '\n', (size_t)(a->end - p));
        e = nl ? nl : a->end;
        a->p = nl ? nl + 1 : a->end;
        p = skip_ws(p, e);
        while (e > p && (unsigned char)e[-1] <= 32)
            e--;
        if (e > p) {
            *s = p;
            *n = (size_t)(e - p);
            return 1;
        }
    }
}

static void jlines_open(jarr *a, const char *data, size_t len)
{
    a->p = data + (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0);
    a->end = data + len;
    a->first = 0;
}

/* Count the elements (and check the array's shape): -1 if malformed. */
static long jarr_count(const char *data, size_t len)
{
    jarr a;
    const char *s;
    size_t n;
    long k = 0;
    int r;
    if (jarr_open(&a, data, len) != 0)
        return -1;
    while ((r = jarr_next(&a, &s, &n)) == 1)
        k++;
    return r == 0 ? k : -1;
}

/* Parse one element: the whole span must be one JSON value. */
static cJSON *parse_element(const char *s, size_t n)
{
    const char *stop = NULL;
    cJSON *o;
    if (n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
        return NULL; /* cJSON skips one at the start of its text: not inside an array */
    o = cJSON_ParseWithLengthOpts(s, n, &stop, 0);
    if (o != NULL && (stop == NULL || skip_ws(stop, s + n) != s + n)) {
        cJSON_Delete(o);
        o = NULL;
    }
    return o;
}

/* A namespace for the import's whole life: the previous one again when it
 * is the same (one copy for a run of memories of one namespace). */
static const char *keep_ns(char ***kept, size_t *nkept, size_t *cap, const char *ns)
{
    char *c;
    if (*nkept > 0 && strcmp((*kept)[*nkept - 1], ns) == 0)
        return (*kept)[*nkept - 1];
    if (cairn__grow(NULL, (void **)kept, cap, *nkept + 1, sizeof **kept) != CAIRN_OK ||
        (c = strdup(ns)) == NULL)
        return NULL;
    (*kept)[(*nkept)++] = c;
    return c;
}

/* The import's own vectors (from gname, gdim; "" for none) and the
 * handle's embedder are one: CAIRN_OK, else CAIRN_EINVAL saying so. */
static int same_embedder(cairn_mem *m, const char *gname, uint32_t gdim)
{
    if (gname[0] == 0 || (strcmp(gname, m->emb.name) == 0 && gdim == m->emb.dim))
        return CAIRN_OK;
    return cairn__mem_fail(m, CAIRN_EINVAL, "the import's vectors come from \"%s\" (%u "
                           "dimensions), not from this handle's embedder \"%s\" (%u): vectors "
                           "of two embedders are never mixed",
                           gname, gdim, m->emb.name, m->emb.dim);
}

int cairn_mem_import(cairn_mem *m, cairn_mem_format f, const char *data, size_t len,
                     const char *default_ns, uint64_t *imported, uint64_t *skipped)
{
    return cairn_mem_import_each(m, f, data, len, default_ns, NULL, 0, NULL, imported, skipped);
}

int cairn_mem_import_each(cairn_mem *m, cairn_mem_format f, const char *data, size_t len,
                          const char *default_ns, unsigned char *outcome, size_t n_outcome,
                          size_t *bad, uint64_t *imported, uint64_t *skipped)
{
    cJSON *arr = NULL, *o = NULL, *next;
    jarr ja;
    char **ns_kept = NULL;
    size_t n_ns_kept = 0, ns_cap = 0;
    memrec *recs = NULL;
    float *vecs = NULL, *vecs_late = NULL, **given = NULL;
    uint64_t emb_gen = 0;
    char gname[CAIRN_EMBEDDER_NAME_MAX + 1] = "";
    uint32_t gdim = 0;
    char (*ids)[CAIRN_MEM_ID_MAX + 1] = NULL;
    const char **nss = NULL;
    const memrec **write = NULL;
    unsigned char *keep = NULL;
    size_t n = 0, i = 0, w, nkeep = 0;
    cairn__err e;
    int rc = CAIRN_OK, turn = 0;

    if (imported)
        *imported = 0;
    if (skipped)
        *skipped = 0;
    if (bad)
        *bad = 0;
    if (default_ns == NULL)
        default_ns = "";
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    /* Reading and checking the input, and embedding it, happen before the
     * turn of the writer lock: other processes' writers wait for neither. */
    if (cairn__utf8_check(&e, "namespace", default_ns, strlen(default_ns)) != CAIRN_OK) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "%s", e.msg);
    } else if (f == CAIRN_MEM_JSON) {
        long k = jarr_count(data, len);
        if (k < 0)
            rc = cairn__mem_fail(m, CAIRN_EINVAL, "json: not a JSON array of memories");
        else if (cairn__utf8_check_json(&e, NULL, "memory", data, len) != CAIRN_OK)
            rc = cairn__mem_fail(m, CAIRN_EINVAL, "%s", e.msg);
        n = (size_t)k;
        if (rc == CAIRN_OK)
            (void)jarr_open(&ja, data, len);
    } else if (f == CAIRN_MEM_JSONL) {
        const char *es;
        size_t el;
        jlines_open(&ja, data, len);
        while (jlines_next(&ja, &es, &el) == 1)
            n++;
        if (cairn__utf8_check_json(&e, NULL, "memory", data, len) != CAIRN_OK)
            rc = cairn__mem_fail(m, CAIRN_EINVAL, "%s", e.msg);
        jlines_open(&ja, data, len);
    } else if (f == CAIRN_MEM_CSV) {
        rc = from_csv(m, data, len, &arr);
    } else if (f == CAIRN_MEM_MD) {
        rc = from_md(m, data, len, &arr);
    } else {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "Invalid format");
    }
    if (rc != CAIRN_OK)
        goto out;
    if (arr != NULL)
        n = (size_t)cJSON_GetArraySize(arr);
    recs = calloc(n ? n : 1, sizeof *recs);
    ids = calloc(n ? n : 1, sizeof *ids);
    nss = calloc(n ? n : 1, sizeof *nss);
    given = calloc(n ? n : 1, sizeof *given);
    if (recs == NULL || ids == NULL || nss == NULL || given == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        goto out;
    }
    /* Check every memory before writing any: one element's tree at a time
     * from a JSON file (parsed, checked, kept as its record's text, freed),
     * the converted array's items for CSV and Markdown. */
    next = arr != NULL ? arr->child : NULL;
    for (i = 0; i < n; i++) {
        const cJSON *ns, *content;
        char *text;
        if (arr != NULL) {
            o = next;
            next = o->next;
        } else {
            const char *es = NULL;
            size_t el = 0;
            cJSON_Delete(o);
            o = NULL;
            if (f == CAIRN_MEM_JSONL) {
                if (jlines_next(&ja, &es, &el) != 1 || (o = parse_element(es, el)) == NULL) {
                    rc = cairn__mem_fail(m, CAIRN_EINVAL, "jsonl: memory %zu (its line) is not "
                                         "one JSON value", i + 1);
                    break;
                }
            } else if (jarr_next(&ja, &es, &el) != 1 || (o = parse_element(es, el)) == NULL) {
                rc = cairn__mem_fail(m, CAIRN_EINVAL, "json: not a JSON array of memories "
                                     "(memory %zu is not JSON)", i + 1);
                break;
            }
        }
        ns = cJSON_GetObjectItemCaseSensitive(o, "namespace");
        content = cJSON_GetObjectItemCaseSensitive(o, "content");
        if (!cJSON_IsObject(o)) {
            rc = cairn__mem_fail(m, CAIRN_EINVAL, "memory %zu: not an object", i + 1);
            break;
        }
        if (!cJSON_HasObjectItem(o, "id"))
            cairn__mem_new_id(m, cJSON_IsString(content) ? content->valuestring : "", ids[i]);
        else
            ids[i][0] = 0;
        if (ids[i][0] && cJSON_AddStringToObject(o, "id", ids[i]) == NULL) {
            rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
            break;
        }
        if (!cJSON_HasObjectItem(o, "category"))
            cJSON_AddStringToObject(o, "category", "fact");
        if (ns != NULL && (!cJSON_IsString(ns) || strlen(ns->valuestring) > CAIRN_NS_MAX)) {
            rc = cairn__mem_fail(m, CAIRN_EINVAL, "memory %zu: namespace is not a string of "
                                 "at most %d bytes", i + 1, CAIRN_NS_MAX);
            break;
        }
        nss[i] = ns == NULL ? default_ns
                 : arr != NULL ? ns->valuestring /* the tree lives until the end */
                               : keep_ns(&ns_kept, &n_ns_kept, &ns_cap, ns->valuestring);
        if (nss[i] == NULL) {
            rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
            break;
        }
        if ((rc = take_embedding(m, o, i, &given[i], gname, &gdim)) != CAIRN_OK)
            break;
        /* A commit's mark is the writer's, never the input's. */
        cJSON_DeleteItemFromObjectCaseSensitive(o, "batch");
        exact_ints(o);
        text = cJSON_PrintUnformatted(o);
        if (text == NULL) {
            rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
            break;
        }
        rc = cairn__memrec_decode_own(CAIRN_REC_MEMORY, text, strlen(text), &recs[i], &e);
        free(text);
        if (rc == CAIRN_OK && given[i] != NULL) {
            recs[i].embedder = gname;
            recs[i].dim = gdim;
            recs[i].vec = given[i];
        }
        if (rc != CAIRN_OK) {
            rc = cairn__mem_fail(m, rc == CAIRN_ECORRUPT ? CAIRN_EINVAL : rc, "memory %zu: %s",
                                 i + 1, e.msg);
            break;
        }
    }
    if (arr == NULL) {
        cJSON_Delete(o);
        o = NULL;
    }
    if (rc == CAIRN_EINVAL && i < n && bad != NULL)
        *bad = i + 1; /* the memory the refusal names */
    if (rc == CAIRN_OK && outcome != NULL && n_outcome < n)
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "the input holds %zu memories, the outcome array "
                             "%zu", n, n_outcome);
    if (rc != CAIRN_OK)
        goto out;
    if ((keep = malloc(n ? n : 1)) == NULL || (write = calloc(n ? n : 1, sizeof *write)) == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        goto out;
    }
    /* With an embedder, every memory the store does not hold yet gets its
     * vector now, in one batch (an embedder that fails stores nothing),
     * before the turn: a model may take minutes over a large import. */
    if (m->emb.dim != 0 && (m->emb.embed != NULL || m->emb.embed_batch != NULL)) {
        if ((rc = same_embedder(m, gname, gdim)) != CAIRN_OK)
            goto out;
        if ((rc = cairn__mem_catch_up(m)) != CAIRN_OK ||
            (rc = choose(m, recs, nss, n, keep, &nkeep)) != CAIRN_OK ||
            (rc = embed_imports(m, recs, keep, n, &vecs)) != CAIRN_OK)
            goto out;
        emb_gen = m->emb_gen;
    }
    /* The duplicate checks and the commit see the log as it is. */
    if ((rc = cairn__mem_turn_begin(m)) != CAIRN_OK)
        goto out;
    turn = 1;
    /* The import's own vectors must fit the store. */
    if (gname[0] != 0 && (rc = cairn__mem_vec_compatible(m, gname, gdim)) != CAIRN_OK)
        goto out;
    if ((rc = choose(m, recs, nss, n, keep, &nkeep)) != CAIRN_OK)
        goto out;
    if ((rc = check_limit(m, nss, keep, n, nkeep)) != CAIRN_OK)
        goto out;
    if (m->emb.dim != 0 && (m->emb.embed != NULL || m->emb.embed_batch != NULL)) {
        if (vecs != NULL && emb_gen != m->emb_gen) /* another embedder since: not its vectors */
            for (i = 0; i < n; i++)
                if (recs[i].vec != NULL && given[i] == NULL) {
                    recs[i].vec = NULL;
                    recs[i].embedder = NULL;
                    recs[i].dim = 0;
                }
        if ((rc = same_embedder(m, gname, gdim)) != CAIRN_OK)
            goto out;
        /* those that became new meanwhile (a memory deleted by another process) */
        if ((rc = embed_imports(m, recs, keep, n, &vecs_late)) != CAIRN_OK)
            goto out;
    }
    /* One commit: after a crash or a full disk, a replay finds all of the
     * import or none of it (batch.h). */
    for (i = 0, w = 0; i < n; i++)
        if (keep[i]) {
            nss[w] = nss[i];
            write[w++] = &recs[i];
        }
    rc = cairn__mem_write_commit(m, nss, write, nkeep);
    for (i = 0; rc == CAIRN_OK && outcome != NULL && i < n; i++)
        outcome[i] = keep[i] ? CAIRN_IMPORT_STORED : CAIRN_IMPORT_SKIPPED;
    if (rc == CAIRN_OK && imported)
        *imported = nkeep;
    if (rc == CAIRN_OK && skipped)
        *skipped = n - nkeep;
out:
    for (size_t k = 0; recs != NULL && k < n; k++)
        cairn__memrec_done(&recs[k]);
    for (size_t k = 0; k < n_ns_kept; k++)
        free(ns_kept[k]);
    free(ns_kept);
    free(vecs);
    free(vecs_late);
    for (size_t k = 0; given != NULL && k < n; k++)
        free(given[k]);
    free(given);
    free(recs);
    free(ids);
    free(nss);
    free(keep);
    free(write);
    cJSON_Delete(arr);
    if (turn)
        rc = cairn__mem_turn_end(m, rc);
    if (turn && rc == CAIRN_OK)
        cairn__mem_flush_if_due(m);
    pthread_mutex_unlock(&m->mu);
    return rc;
}
