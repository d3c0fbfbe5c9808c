/*
 * memrec.c - see memrec.h and format-spec/memory.md.
 *
 * cJSON parses (it is the project's JSON library; it allocates with
 * malloc). A replay folds every other process's records, so the common
 * ones (a flat object without escapes) are read by a scan of its own,
 * under the same rules (one set of field accessors serves both); whatever
 * the scan declines goes to cJSON. Numbers are doubles in JSON: a timestamp must be an integer
 * between 0 and 2^53, a count an integer between 0 and 2^53, an importance
 * a number in [0, 1]. Unknown fields are ignored (a later version may add
 * some); a known field of the wrong type is corruption.
 */
#include "memrec.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "jsonnum.h"

#define MAX_SAFE_INT 9007199254740992.0 /* 2^53 */

int cairn__memrec_id_ok(const char *s)
{
    size_t n = 0;
    if (s == NULL)
        return 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return n >= 1 && n <= MEM_ID_MAX;
}

static const char *kind(uint16_t type)
{
    const char *n = cairn_record_type_name(type);
    return n ? n : "memory record";
}

/* ---- field access: one set of rules over two parsers ------------------- */

/* A field's value as the rules below see it, from a cJSON tree or from
 * the flat scan (scan_flat). */
enum { JV_NONE, JV_NULL, JV_STR, JV_NUM, JV_TRUE, JV_OTHER };

typedef struct jval {
    int kind;
    const char *str;    /* JV_STR: NUL-terminated */
    double num;         /* JV_NUM */
    const cJSON *node;  /* the cJSON item, NULL from the flat scan */
} jval;

/* The fields the rules read by name; the flat scan keeps these (any other
 * is checked and skipped). */
enum {
    F_ID, F_CONTENT, F_CATEGORY, F_IMPORTANCE, F_CREATED, F_ACCESSED, F_EXPIRES, F_COUNT,
    F_RESTORED, F_METADATA, F_REASON, F_EMBEDDER, F_DIM, F_AT, F_UPTO, F_NAMESPACE, F_ALL,
    FLAT_N
};
static const struct {
    const char *name;
    size_t len;
} fnames[FLAT_N] = {
#define N_(s) {s, sizeof s - 1}
    N_("id"),          N_("content"),      N_("category"), N_("importance"), N_("createdAt"),
    N_("accessedAt"),  N_("expiresAt"),    N_("accessCount"), N_("restoredFrom"),
    N_("metadata"),    N_("reason"),       N_("embedder"), N_("dim"),        N_("at"),
    N_("upto"),        N_("namespace"),    N_("all"),
#undef N_
};

typedef struct flat {
    jval v[FLAT_N];
    int batch;           /* a commit's mark [i,n] was there */
    uint64_t batch_i, batch_n;
} flat;

/* Where fields come from: exactly one of root and fl. */
typedef struct jsrc {
    const cJSON *root;
    const flat *fl;
} jsrc;

static jval field(const jsrc *src, int f)
{
    jval v = {JV_NONE, NULL, 0, NULL};
    const cJSON *c;

    if (src->fl != NULL)
        return src->fl->v[f];
    c = cJSON_GetObjectItemCaseSensitive(src->root, fnames[f].name);
    v.node = c;
    if (c == NULL)
        return v;
    if (cJSON_IsNull(c))
        v.kind = JV_NULL;
    else if (cJSON_IsString(c) && c->valuestring != NULL)
        v.kind = JV_STR, v.str = c->valuestring;
    else if (cJSON_IsNumber(c))
        v.kind = JV_NUM, v.num = c->valuedouble;
    else if (cJSON_IsTrue(c))
        v.kind = JV_TRUE;
    else
        v.kind = JV_OTHER;
    return v;
}

/* A string field: required or not. */
static int get_str(const jsrc *src, int f, int required, const char **out, size_t max,
                   uint16_t type, cairn__err *e)
{
    const char *name = fnames[f].name;
    jval v = field(src, f);
    *out = NULL;
    if (v.kind == JV_NONE || v.kind == JV_NULL) {
        if (required)
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"%s\" missing", kind(type), name);
        return CAIRN_OK;
    }
    if (v.kind != JV_STR)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"%s\" is not a string", kind(type), name);
    if (strlen(v.str) > max)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"%s\" longer than %zu bytes", kind(type),
                           name, max);
    *out = v.str;
    return CAIRN_OK;
}

/* An integer time or count in [0, 2^53]; absent or null gives 0. *present
 * (may be NULL) tells whether the field was there (null counts). */
static int get_int(const jsrc *src, int f, int64_t *out, int *present, uint16_t type,
                   cairn__err *e)
{
    const char *name = fnames[f].name;
    jval v = field(src, f);
    *out = 0;
    if (present)
        *present = v.kind != JV_NONE;
    if (v.kind == JV_NONE || v.kind == JV_NULL)
        return CAIRN_OK;
    if (v.kind != JV_NUM || !(v.num >= 0) || v.num > MAX_SAFE_INT || v.num != floor(v.num))
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"%s\" is not an integer in 0..2^53",
                           kind(type), name);
    *out = (int64_t)v.num;
    return CAIRN_OK;
}

static int get_importance(const jsrc *src, double *out, int *present, uint16_t type,
                          cairn__err *e)
{
    jval v = field(src, F_IMPORTANCE);
    *present = v.kind != JV_NONE;
    if (v.kind == JV_NONE)
        return CAIRN_OK;
    if (v.kind != JV_NUM || !(v.num >= 0.0 && v.num <= 1.0))
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"importance\" is not a number in 0..1",
                           kind(type));
    *out = v.num;
    return CAIRN_OK;
}

static int get_metadata(const jsrc *src, char **out, int *present, uint16_t type, cairn__err *e)
{
    jval v = field(src, F_METADATA);
    *out = NULL;
    *present = v.kind != JV_NONE;
    if (v.kind == JV_NONE || v.kind == JV_NULL)
        return CAIRN_OK;
    if (v.node == NULL || !cJSON_IsObject(v.node))
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"metadata\" is not an object",
                           kind(type));
    *out = cJSON_PrintUnformatted(v.node);
    return *out == NULL ? cairn__fail(e, CAIRN_ENOMEM, "no memory for metadata") : CAIRN_OK;
}

/* The fold form of memory.access (format-spec/memory.md): "counts" and
 * "last" beside "ids", and the side file's "file" and "upto". Without
 * "counts" the record is the per-recall form and none of them is read. */
static int decode_fold(const jsrc *src, memrec *r, cairn__err *e)
{
    const uint16_t type = CAIRN_REC_MEMORY_ACCESS;
    const cJSON *root = src->root;
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(root, "counts");
    const cJSON *last = cJSON_GetObjectItemCaseSensitive(root, "last");
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(root, "file");
    int64_t upto;
    size_t i = 0;
    int rc;

    if (counts == NULL)
        return CAIRN_OK;
    if (!cJSON_IsArray(counts) || !cJSON_IsArray(last) ||
        (size_t)cJSON_GetArraySize(counts) != r->n_ids || (size_t)cJSON_GetArraySize(last) != r->n_ids)
        return cairn__fail(e, CAIRN_ECORRUPT,
                           "%s: \"counts\" and \"last\" are not arrays as long as \"ids\"", kind(type));
    if (!cJSON_IsString(file) || file->valuestring == NULL || strlen(file->valuestring) != 16 ||
        strspn(file->valuestring, "0123456789abcdef") != 16 ||
        (r->acc_file = strtoull(file->valuestring, NULL, 16)) == 0)
        return cairn__fail(e, CAIRN_ECORRUPT,
                           "%s: field \"file\" is not 16 lowercase hex digits, not all 0", kind(type));
    if ((rc = get_int(src, F_UPTO, &upto, NULL, type, e)) != CAIRN_OK)
        return rc;
    r->acc_upto = (uint64_t)upto;
    r->counts = calloc(r->n_ids ? r->n_ids : 1, sizeof *r->counts);
    r->lasts = calloc(r->n_ids ? r->n_ids : 1, sizeof *r->lasts);
    if (r->counts == NULL || r->lasts == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "no memory");
    /* walked as lists: cJSON_GetArrayItem would make this quadratic */
    for (const cJSON *c = counts->child, *t = last->child; c != NULL && t != NULL && i < r->n_ids;
         c = c->next, t = t->next, i++) {
        if (!cJSON_IsNumber(c) || !(c->valuedouble >= 1) || c->valuedouble > MAX_SAFE_INT ||
            c->valuedouble != floor(c->valuedouble))
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: counts[%zu] is not an integer in 1..2^53",
                               kind(type), i);
        if (!cJSON_IsNumber(t) || !(t->valuedouble >= 0) || t->valuedouble > MAX_SAFE_INT ||
            t->valuedouble != floor(t->valuedouble))
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: last[%zu] is not an integer in 0..2^53",
                               kind(type), i);
        r->counts[i] = (uint64_t)c->valuedouble;
        r->lasts[i] = (int64_t)t->valuedouble;
    }
    return CAIRN_OK;
}

/* The fields of each type. memory.access and memory.clear read arrays
 * and booleans: only from a cJSON tree (the flat scan declines them). */
static int decode_fields(uint16_t type, const jsrc *src, memrec *r, cairn__err *e)
{
    int rc = CAIRN_OK, present;
    int64_t n;

    switch (type) {
    case CAIRN_REC_MEMORY:
        if ((rc = get_str(src, F_ID, 1, &r->id, MEM_ID_MAX, type, e)) != CAIRN_OK)
            return rc;
        if ((rc = get_str(src, F_CONTENT, 1, &r->content, MEM_CONTENT_MAX, type, e)) != CAIRN_OK)
            return rc;
        r->content_len = strlen(r->content);
        if (r->content_len == 0)
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"content\" is empty", kind(type));
        if ((rc = get_str(src, F_CATEGORY, 1, &r->category, MEM_CATEGORY_MAX, type, e)) != CAIRN_OK)
            return rc;
        r->importance = 0.5;
        if ((rc = get_importance(src, &r->importance, &present, type, e)) != CAIRN_OK)
            return rc;
        if ((rc = get_int(src, F_CREATED, &r->created_at, NULL, type, e)) != CAIRN_OK ||
            (rc = get_int(src, F_ACCESSED, &r->accessed_at, NULL, type, e)) != CAIRN_OK ||
            (rc = get_int(src, F_EXPIRES, &r->expires_at, NULL, type, e)) != CAIRN_OK ||
            (rc = get_int(src, F_COUNT, &n, NULL, type, e)) != CAIRN_OK)
            return rc;
        r->access_count = (uint64_t)n;
        if ((rc = get_int(src, F_RESTORED, &n, NULL, type, e)) != CAIRN_OK)
            return rc;
        r->restored_from = (uint64_t)n;
        return get_metadata(src, &r->metadata, &present, type, e);
    case CAIRN_REC_MEMORY_UPDATE:
        if ((rc = get_str(src, F_ID, 1, &r->id, MEM_ID_MAX, type, e)) != CAIRN_OK)
            return rc;
        if ((rc = get_importance(src, &r->importance, &present, type, e)) != CAIRN_OK)
            return rc;
        r->has |= present ? MEMREC_HAS_IMPORTANCE : 0;
        if ((rc = get_str(src, F_CATEGORY, 0, &r->category, MEM_CATEGORY_MAX, type, e)) != CAIRN_OK)
            return rc;
        r->has |= r->category != NULL ? MEMREC_HAS_CATEGORY : 0;
        if ((rc = get_int(src, F_EXPIRES, &r->expires_at, &present, type, e)) != CAIRN_OK)
            return rc;
        r->has |= present ? MEMREC_HAS_EXPIRES : 0;
        if ((rc = get_metadata(src, &r->metadata, &present, type, e)) != CAIRN_OK)
            return rc;
        r->has |= present ? MEMREC_HAS_METADATA : 0;
        return CAIRN_OK;
    case CAIRN_REC_MEMORY_DELETE:
        if ((rc = get_str(src, F_ID, 1, &r->id, MEM_ID_MAX, type, e)) != CAIRN_OK)
            return rc;
        return get_str(src, F_REASON, 0, &r->reason, 4096, type, e);
    case CAIRN_REC_MEMORY_ACCESS: {
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(src->root, "ids"), *v;
        size_t i = 0;
        if ((rc = get_int(src, F_AT, &r->accessed_at, NULL, type, e)) != CAIRN_OK)
            return rc;
        if (!cJSON_IsArray(ids))
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"ids\" is not an array", kind(type));
        r->n_ids = (size_t)cJSON_GetArraySize(ids);
        r->ids = calloc(r->n_ids ? r->n_ids : 1, sizeof *r->ids);
        if (r->ids == NULL)
            return cairn__fail(e, CAIRN_ENOMEM, "no memory");
        cJSON_ArrayForEach(v, ids) {
            if (!cJSON_IsString(v) || !cairn__memrec_id_ok(v->valuestring))
                return cairn__fail(e, CAIRN_ECORRUPT, "%s: ids[%zu] is not a memory id",
                                   kind(type), i);
            r->ids[i++] = v->valuestring;
        }
        return decode_fold(src, r, e);
    }
    case CAIRN_REC_MEMORY_PURGE: {
        const cJSON *live = src->root ? cJSON_GetObjectItemCaseSensitive(src->root, "live") : NULL;
        if ((rc = get_str(src, F_ID, 1, &r->id, MEM_ID_MAX, type, e)) != CAIRN_OK ||
            (rc = get_int(src, F_AT, &r->accessed_at, NULL, type, e)) != CAIRN_OK)
            return rc;
        if (live != NULL && !cJSON_IsBool(live))
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"live\" is not a boolean",
                               kind(type));
        r->purge_live = cJSON_IsTrue(live);
        /* The embedder its vector fixed, if it did: a name and a dim. */
        if ((rc = get_str(src, F_EMBEDDER, 0, &r->embedder, 63, type, e)) != CAIRN_OK)
            return rc;
        if (r->embedder != NULL) {
            jval d = field(src, F_DIM);
            if (r->embedder[0] == 0 || d.kind != JV_NUM || !(d.num >= 1 && d.num <= 65536) ||
                d.num != floor(d.num))
                return cairn__fail(e, CAIRN_ECORRUPT, "%s: \"embedder\" without a \"dim\" in "
                                   "1..65536", kind(type));
            r->dim = (uint32_t)d.num;
        }
        return CAIRN_OK;
    }
    case CAIRN_REC_MEMORY_CLEAR:
        if ((rc = get_str(src, F_NAMESPACE, 0, &r->clear_ns, CAIRN_NS_MAX, type, e)) != CAIRN_OK)
            return rc;
        if (r->clear_ns == NULL && field(src, F_ALL).kind != JV_TRUE)
            return cairn__fail(e, CAIRN_ECORRUPT,
                               "%s: neither \"namespace\" nor \"all\": true", kind(type));
        return CAIRN_OK;
    default:
        return cairn__fail(e, CAIRN_ECORRUPT, "record type %u is not a memory record",
                           (unsigned)type);
    }
}

/* A memory's vector: "embedder" and "dim" in the JSON, dim finite f32 in
 * the trailer. A trailer without "embedder" is ignored. */
static int decode_vector(const jsrc *src, const void *bin, size_t bin_len, memrec *r,
                         cairn__err *e)
{
    jval d = field(src, F_DIM);
    int rc = get_str(src, F_EMBEDDER, 0, &r->embedder, 63, r->type, e);
    if (rc != CAIRN_OK || r->embedder == NULL)
        return rc;
    if (r->embedder[0] == 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"embedder\" is empty", kind(r->type));
    if (d.kind != JV_NUM || !(d.num >= 1 && d.num <= 65536) || d.num != floor(d.num))
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"dim\" is not an integer in 1..65536",
                           kind(r->type));
    r->dim = (uint32_t)d.num;
    if (bin == NULL || bin_len != (size_t)r->dim * 4)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: the vector has %zu bytes, not dim x 4 = %zu",
                           kind(r->type), bin ? bin_len : 0, (size_t)r->dim * 4);
    for (uint32_t i = 0; i < r->dim; i++) {
        float f;
        memcpy(&f, (const uint8_t *)bin + 4 * i, 4);
        if (!isfinite(f))
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: vector value %u is not finite",
                               kind(r->type), i);
    }
    r->vec = bin;
    return CAIRN_OK;
}

/* The checks after the fields, for both parsers. */
static int decode_rest(const jsrc *src, const void *bin, size_t bin_len, memrec *out,
                       cairn__err *e)
{
    int rc = decode_fields(out->type, src, out, e);
    if (rc == CAIRN_OK && out->type == CAIRN_REC_MEMORY)
        rc = decode_vector(src, bin, bin_len, out, e);
    if (rc == CAIRN_OK && out->id != NULL && !cairn__memrec_id_ok(out->id))
        rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"id\" is not a memory id", kind(out->type));
    if (rc == CAIRN_OK && out->category != NULL && out->category[0] == '\0')
        rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"category\" is empty", kind(out->type));
    return rc;
}

int cairn__memrec_decode(uint16_t type, const char *json, size_t len, memrec *out, cairn__err *e)
{
    return cairn__memrec_decode_bin(type, json, len, NULL, 0, out, e);
}

int cairn__memrec_decode_bin(uint16_t type, const char *json, size_t len, const void *bin,
                             size_t bin_len, memrec *out, cairn__err *e)
{
    cJSON *root;
    jsrc src;
    int rc;

    memset(out, 0, sizeof *out);
    out->type = type;
    root = cJSON_ParseWithLength(json, len);
    if (root == NULL)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: payload is not JSON", kind(type));
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: payload is not a JSON object", kind(type));
    }
    out->root = root;
    src.root = root;
    src.fl = NULL;
    rc = decode_rest(&src, bin, bin_len, out, e);
    if (rc == CAIRN_OK && cairn__batch_get(root, &out->batch_i, &out->batch_n) < 0)
        rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: field \"batch\" is not [i,n] with 0 <= i < n",
                         kind(type));
    if (rc != CAIRN_OK)
        cairn__memrec_done(out);
    return rc;
}

/* ---- the flat scan: memory records without cJSON ------------------------ */

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* p past JSON whitespace, at most to end. */
static char *skip_ws(char *p, const char *end)
{
    while (p < end && is_ws(*p))
        p++;
    return p;
}

/* A string at p (after its opening quote) without escapes or control
 * bytes: its closing quote, or NULL to decline. */
static char *flat_string(char *p, const char *end)
{
    for (; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p;
        if (c == '\\' || c < 0x20)
            return NULL;
    }
    return NULL;
}

/* A number in strict JSON form at *pp; its value as cJSON reads it
 * (strtod over at most 63 characters). 0 to decline. */
static int flat_number(char **pp, const char *end, double *out)
{
    char *p = *pp, *s = p, buf[64];
    size_t n;
    int plain = 1;

    if (p < end && *p == '-')
        p++, plain = 0;
    if (p >= end || !(*p >= '0' && *p <= '9'))
        return 0;
    if (*p == '0')
        p++;
    else
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    if (p < end && *p == '.') {
        plain = 0;
        if (++p >= end || !(*p >= '0' && *p <= '9'))
            return 0;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        plain = 0;
        if (++p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || !(*p >= '0' && *p <= '9'))
            return 0;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    n = (size_t)(p - s);
    if (n > 63)
        return 0;
    if (plain && n <= 15) { /* exact as an integer, and so as strtod reads it */
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++)
            v = v * 10 + (uint64_t)(s[i] - '0');
        *out = (double)v;
    } else {
        memcpy(buf, s, n);
        buf[n] = 0;
        *out = cairn__json_strtod(buf);
    }
    *pp = p;
    return 1;
}

/* Scan a JSON object of strings, numbers, true, false and null (no
 * escapes, no nesting, no repeated field this decoder reads) in s, a
 * private copy it NUL-terminates strings in. 0 to decline: the record
 * then goes to cJSON, which decides. */
/* An exact count as cairn__batch_get takes one: a number, integral, in
 * 0..CAIRN_BATCH_MAX. */
static int flat_count(char **pp, const char *end, uint64_t *out)
{
    double d;
    if (!flat_number(pp, end, &d) || !(d >= 0) || d > CAIRN_BATCH_MAX || d != floor(d))
        return 0;
    *out = (uint64_t)d;
    return 1;
}

/* A commit's mark at *pp: '[' i ',' n ']' with i < n. 0 to decline. */
static int flat_mark(char **pp, const char *end, uint64_t *i, uint64_t *n)
{
    char *p = *pp;
    if (p >= end || *p++ != '[')
        return 0;
    p = skip_ws(p, end);
    if (!flat_count(&p, end, i))
        return 0;
    p = skip_ws(p, end);
    if (p >= end || *p++ != ',')
        return 0;
    p = skip_ws(p, end);
    if (!flat_count(&p, end, n))
        return 0;
    p = skip_ws(p, end);
    if (p >= end || *p++ != ']' || *i >= *n)
        return 0;
    *pp = p;
    return 1;
}

static int scan_flat(char *s, size_t len, flat *fl)
{
    char *p = s, *end = s + len;
    int first = 1;

    for (size_t i = 0; i < FLAT_N; i++)
        fl->v[i].kind = JV_NONE;
    fl->batch = 0;
    fl->batch_i = fl->batch_n = 0;
    p = skip_ws(p, end);
    if (p >= end || *p++ != '{')
        return 0;
    for (;;) {
        char *k, *q;
        jval v = {JV_NONE, NULL, 0, NULL};
        size_t klen, slot = FLAT_N;

        p = skip_ws(p, end);
        if (first && p < end && *p == '}') {
            p++;
            break;
        }
        first = 0;
        if (p >= end || *p++ != '"' || (q = flat_string(p, end)) == NULL)
            return 0;
        k = p;
        klen = (size_t)(q - p);
        for (size_t i = 0; i < FLAT_N; i++)
            if (fnames[i].len == klen && memcmp(fnames[i].name, k, klen) == 0)
                slot = i;
        p = q + 1;
        p = skip_ws(p, end);
        if (p >= end || *p++ != ':')
            return 0;
        p = skip_ws(p, end);
        if (p >= end)
            return 0;
        if (klen == 5 && memcmp(k, "batch", 5) == 0) {
            /* A commit's mark (batch.h): [i,n], both exact counts, i < n.
             * Anything else, or a second one, is cJSON's to judge. */
            if (fl->batch || !flat_mark(&p, end, &fl->batch_i, &fl->batch_n))
                return 0;
            fl->batch = 1;
            v.kind = JV_OTHER;
        } else if (*p == '"') {
            if ((q = flat_string(p + 1, end)) == NULL)
                return 0;
            *q = 0;
            v.kind = JV_STR;
            v.str = p + 1;
            p = q + 1;
        } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
            if (!flat_number(&p, end, &v.num))
                return 0;
            v.kind = JV_NUM;
        } else if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
            v.kind = JV_NULL;
            p += 4;
        } else if (end - p >= 4 && memcmp(p, "true", 4) == 0) {
            v.kind = JV_TRUE;
            p += 4;
        } else if (end - p >= 5 && memcmp(p, "false", 5) == 0) {
            v.kind = JV_OTHER;
            p += 5;
        } else {
            return 0; /* an object or an array */
        }
        if (slot < FLAT_N) {
            if (fl->v[slot].kind != JV_NONE)
                return 0; /* repeated: cJSON's first one wins; let it say */
            fl->v[slot] = v;
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == '}') {
            p++;
            break;
        }
        return 0;
    }
    p = skip_ws(p, end);
    return p == end;
}

int cairn__memrec_decode_scan(cairn__memscan *sc, uint16_t type, const char *json, size_t len,
                              const void *bin, size_t bin_len, memrec *out, cairn__err *e)
{
    flat fl;
    jsrc src;

    if (sc == NULL || (type != CAIRN_REC_MEMORY && type != CAIRN_REC_MEMORY_UPDATE &&
                       type != CAIRN_REC_MEMORY_DELETE))
        return cairn__memrec_decode_bin(type, json, len, bin, bin_len, out, e);
    if (len + 1 > sc->cap) {
        size_t cap = len + 1 > 4096 ? len + 1 : 4096;
        char *b = realloc(sc->buf, cap);
        if (b == NULL)
            return cairn__memrec_decode_bin(type, json, len, bin, bin_len, out, e);
        sc->buf = b;
        sc->cap = cap;
    }
    memcpy(sc->buf, json, len);
    sc->buf[len] = 0;
    memset(out, 0, sizeof *out);
    out->type = type;
    src.root = NULL;
    src.fl = &fl;
    if (scan_flat(sc->buf, len, &fl) && decode_rest(&src, bin, bin_len, out, NULL) == CAIRN_OK) {
        out->batch_i = fl.batch_i;
        out->batch_n = fl.batch_n;
        return CAIRN_OK;
    }
    /* Declined, or a rule failed: cJSON decides, and words the error. */
    cairn__memrec_done(out);
    return cairn__memrec_decode_bin(type, json, len, bin, bin_len, out, e);
}

void cairn__memscan_free(cairn__memscan *sc)
{
    if (sc == NULL)
        return;
    free(sc->buf);
    sc->buf = NULL;
    sc->cap = 0;
}

int cairn__memrec_decode_own(uint16_t type, const char *json, size_t len, memrec *out,
                             cairn__err *e)
{
    cairn__memscan sc = {malloc(len + 1), len + 1}; /* exactly: no 4 KiB floor */
    int rc;
    if (sc.buf == NULL)
        sc.cap = 0;
    rc = cairn__memrec_decode_scan(&sc, type, json, len, NULL, 0, out, e);
    if (rc == CAIRN_OK && out->root == NULL)
        out->owned = sc.buf; /* the strings point into it */
    else
        free(sc.buf);
    return rc;
}

void cairn__memrec_done(memrec *r)
{
    cJSON_Delete(r->root);
    free(r->owned);
    free(r->metadata);
    free(r->ids);
    free(r->counts);
    free(r->lasts);
    memset(r, 0, sizeof *r);
}

/* Integers as their exact digits: cJSON prints a double with 15
 * significant digits when that reads back within an epsilon, which would
 * round a time above 2^50 or so by a millisecond or more. */
int cairn__json_add_int(cJSON *o, const char *name, int64_t v)
{
    char d[24];
    snprintf(d, sizeof d, "%lld", (long long)v);
    return cJSON_AddRawToObject(o, name, d) != NULL;
}

/* A number in [0, 1] as cJSON prints it ("%d" for a whole one, else 15
 * significant digits), except that 17 are taken whenever 15 do not read
 * back exactly: cJSON accepts them within an epsilon, which moved some
 * importances by one unit in the last place. Returns the length. */
static int fmt_unit(char *tmp, size_t cap, double d)
{
    char back[32];
    int k;
    if (d == 0 || d == 1)
        return snprintf(tmp, cap, "%d", (int)d);
    k = cairn__json_fmt(tmp, cap, "%1.15g", d);
    snprintf(back, sizeof back, "%s", tmp);
    if (cairn__json_strtod(back) != d)
        k = cairn__json_fmt(tmp, cap, "%1.17g", d);
    return k;
}

static int add_unit(cJSON *o, const char *name, double d)
{
    char tmp[32];
    fmt_unit(tmp, sizeof tmp, d);
    return cJSON_AddRawToObject(o, name, tmp) != NULL;
}

int cairn__memrec_encode_generic(const memrec *r, char **out, size_t *len, cairn__err *e)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL;

    *out = NULL;
    if (ok && r->id != NULL)
        ok = cJSON_AddStringToObject(o, "id", r->id) != NULL;
    switch (r->type) {
    case CAIRN_REC_MEMORY:
        ok = ok && cJSON_AddStringToObject(o, "content", r->content) != NULL &&
             cJSON_AddStringToObject(o, "category", r->category) != NULL &&
             add_unit(o, "importance", r->importance) &&
             cairn__json_add_int(o, "createdAt", r->created_at) && cairn__json_add_int(o, "accessedAt", r->accessed_at) &&
             cairn__json_add_int(o, "accessCount", (int64_t)r->access_count);
        if (ok)
            ok = r->expires_at ? cairn__json_add_int(o, "expiresAt", r->expires_at)
                               : cJSON_AddNullToObject(o, "expiresAt") != NULL;
        if (ok && r->embedder != NULL)
            ok = cJSON_AddStringToObject(o, "embedder", r->embedder) != NULL &&
                 cairn__json_add_int(o, "dim", r->dim);
        if (ok && r->restored_from != 0)
            ok = cairn__json_add_int(o, "restoredFrom", (int64_t)r->restored_from);
        break;
    case CAIRN_REC_MEMORY_UPDATE:
        if (ok && (r->has & MEMREC_HAS_IMPORTANCE))
            ok = add_unit(o, "importance", r->importance);
        if (ok && (r->has & MEMREC_HAS_CATEGORY))
            ok = cJSON_AddStringToObject(o, "category", r->category) != NULL;
        if (ok && (r->has & MEMREC_HAS_EXPIRES))
            ok = r->expires_at ? cairn__json_add_int(o, "expiresAt", r->expires_at)
                               : cJSON_AddNullToObject(o, "expiresAt") != NULL;
        break;
    case CAIRN_REC_MEMORY_DELETE:
        if (ok && r->reason != NULL)
            ok = cJSON_AddStringToObject(o, "reason", r->reason) != NULL;
        break;
    case CAIRN_REC_MEMORY_ACCESS: {
        cJSON *ids = ok ? cJSON_AddArrayToObject(o, "ids") : NULL;
        ok = ok && cairn__json_add_int(o, "at", r->accessed_at) && ids != NULL;
        for (size_t i = 0; ok && i < r->n_ids; i++) {
            cJSON *s = cJSON_CreateString(r->ids[i]);
            ok = s != NULL && cJSON_AddItemToArray(ids, s);
        }
        if (ok && r->counts != NULL) { /* a fold: exact digits, as cairn__json_add_int */
            cJSON *c = cJSON_AddArrayToObject(o, "counts"), *t = cJSON_AddArrayToObject(o, "last");
            char d[24];
            ok = c != NULL && t != NULL;
            for (size_t i = 0; ok && i < r->n_ids; i++) {
                cJSON *v;
                snprintf(d, sizeof d, "%llu", (unsigned long long)r->counts[i]);
                ok = r->counts[i] >= 1 && (v = cJSON_CreateRaw(d)) != NULL && cJSON_AddItemToArray(c, v);
                snprintf(d, sizeof d, "%lld", (long long)r->lasts[i]);
                ok = ok && r->lasts[i] >= 0 && (v = cJSON_CreateRaw(d)) != NULL &&
                     cJSON_AddItemToArray(t, v);
            }
            snprintf(d, sizeof d, "%016llx", (unsigned long long)r->acc_file);
            ok = ok && cJSON_AddStringToObject(o, "file", d) != NULL &&
                 cairn__json_add_int(o, "upto", (int64_t)r->acc_upto);
        }
        break;
    }
    case CAIRN_REC_MEMORY_PURGE:
        ok = ok && cairn__json_add_int(o, "at", r->accessed_at) &&
             cJSON_AddBoolToObject(o, "live", r->purge_live) != NULL;
        if (ok && r->embedder != NULL)
            ok = cJSON_AddStringToObject(o, "embedder", r->embedder) != NULL &&
                 cairn__json_add_int(o, "dim", r->dim);
        break;
    case CAIRN_REC_MEMORY_CLEAR:
        if (ok)
            ok = r->clear_ns != NULL ? cJSON_AddStringToObject(o, "namespace", r->clear_ns) != NULL
                                     : cJSON_AddTrueToObject(o, "all") != NULL;
        break;
    default:
        cJSON_Delete(o);
        return cairn__fail(e, CAIRN_EINVAL, "record type %u is not a memory record",
                           (unsigned)r->type);
    }
    if (ok && r->batch_n >= 2) { /* [i,n] as exact digits, as cairn__json_add_int */
        cJSON *b = cJSON_AddArrayToObject(o, "batch"), *v;
        char d[2][24];
        snprintf(d[0], sizeof d[0], "%llu", (unsigned long long)r->batch_i);
        snprintf(d[1], sizeof d[1], "%llu", (unsigned long long)r->batch_n);
        ok = b != NULL;
        for (int k = 0; ok && k < 2; k++)
            ok = (v = cJSON_CreateRaw(d[k])) != NULL && cJSON_AddItemToArray(b, v);
    }
    /* metadata last: it is already JSON text, parsed back in */
    if (ok && r->metadata != NULL &&
        (r->type == CAIRN_REC_MEMORY || (r->has & MEMREC_HAS_METADATA))) {
        cJSON *m = cJSON_Parse(r->metadata);
        if (m == NULL || !cJSON_IsObject(m)) {
            cJSON_Delete(m);
            cJSON_Delete(o);
            return cairn__fail(e, CAIRN_EINVAL, "metadata is not a JSON object");
        }
        ok = cJSON_AddItemToObject(o, "metadata", m);
    }
    if (ok)
        *out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (*out == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "no memory to encode a memory record");
    *len = strlen(*out);
    return CAIRN_OK;
}

/* ---- the store record without cJSON ---------------------------------------
 * A memory record is written once per store: building a cJSON tree for it
 * cost more than the log append. This writes the same bytes
 * cJSON_PrintUnformatted would (tests/test_memory.c and fuzz_memrec compare
 * the two), for the one shape it covers: a memory record without metadata
 * (nor restoredFrom: a restore is rare). */

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static int sb_room(sbuf *b, size_t k)
{
    if (b->n + k <= b->cap)
        return 1;
    if (b->cap == 0)
        b->cap = b->n + k > 256 ? b->n + k : 256;
    while (b->cap < b->n + k)
        b->cap *= 2;
    {
        char *q = realloc(b->p, b->cap);
        if (q == NULL)
            return 0;
        b->p = q;
    }
    return 1;
}

static int sb_lit(sbuf *b, const char *s)
{
    size_t k = strlen(s);
    if (!sb_room(b, k))
        return 0;
    memcpy(b->p + b->n, s, k);
    b->n += k;
    return 1;
}

/* The length of the prefix of s[0..len) that JSON takes as it is: no ",
 * \ or control character. Eight bytes a step (the bit tricks of "Bit
 * Twiddling Hacks", haszero / hasless): a memory's content is most of its
 * record and seldom needs an escape. */
static size_t plain_prefix(const char *s, size_t len)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v, q, bs;
        memcpy(&v, s + i, 8);
        q = v ^ (ones * '"');
        bs = v ^ (ones * '\\');
        if ((((q - ones) & ~q) | ((bs - ones) & ~bs) | ((v - ones * 32) & ~v)) & highs)
            break; /* one of these eight needs an escape (or a false alarm) */
    }
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        if (c < 32 || c == '"' || c == '\\')
            break;
        i++;
    }
    return i;
}

/* A JSON string as cJSON escapes it: ", \ and control characters. */
static int sb_str(sbuf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t extra = 0, plain = plain_prefix(s, len);
    if (plain == len) {
        if (!sb_room(b, len + 2))
            return 0;
        b->p[b->n++] = '"';
        memcpy(b->p + b->n, s, len);
        b->n += len;
        b->p[b->n++] = '"';
        return 1;
    }
    for (size_t i = plain; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 32 || c == '"' || c == '\\')
            extra += 5;
    }
    if (!sb_room(b, len + extra + 2))
        return 0;
    b->p[b->n++] = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 32 && c != '"' && c != '\\') {
            b->p[b->n++] = (char)c;
            continue;
        }
        b->p[b->n++] = '\\';
        switch (c) {
        case '"': b->p[b->n++] = '"'; break;
        case '\\': b->p[b->n++] = '\\'; break;
        case '\b': b->p[b->n++] = 'b'; break;
        case '\f': b->p[b->n++] = 'f'; break;
        case '\n': b->p[b->n++] = 'n'; break;
        case '\r': b->p[b->n++] = 'r'; break;
        case '\t': b->p[b->n++] = 't'; break;
        default:
            memcpy(b->p + b->n, "u00", 3);
            b->n += 3;
            b->p[b->n++] = hex[c >> 4];
            b->p[b->n++] = hex[c & 15];
        }
    }
    b->p[b->n++] = '"';
    return 1;
}

/* An integer's exact digits, as add_int writes them. */
static int sb_int(sbuf *b, int64_t v)
{
    char d[24];
    int k = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (!sb_room(b, 22))
        return 0;
    do {
        d[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        b->p[b->n++] = '-';
    while (k > 0)
        b->p[b->n++] = d[--k];
    return 1;
}

/* A double as cJSON 1.7 prints it: "%1.15g", or "%1.17g" when that does
 * not read back (within cJSON's epsilon); -0.0 is "-0". */
static int sb_double(sbuf *b, double d)
{
    char tmp[32];
    int k;
    /* Importances are mostly hundredths (0.5 by default): d == c / 100.0 is
     * the double nearest c/100, which "%1.15g" prints as its two decimals
     * without trailing zeros. Everything else takes printf. */
    double c = d * 100;
    if (d >= 0 && !signbit(d) && d <= 1 && c == (double)(int)c && (double)(int)c / 100 == d) {
        int v = (int)c;
        if (!sb_room(b, 4))
            return 0;
        if (v == 0 || v == 100) {
            b->p[b->n++] = v ? '1' : '0';
            return 1;
        }
        memcpy(b->p + b->n, "0.", 2);
        b->n += 2;
        b->p[b->n++] = (char)('0' + v / 10);
        if (v % 10 != 0)
            b->p[b->n++] = (char)('0' + v % 10);
        return 1;
    }
    k = fmt_unit(tmp, sizeof tmp, d);
    if (k <= 0 || !sb_room(b, (size_t)k))
        return 0;
    memcpy(b->p + b->n, tmp, (size_t)k);
    b->n += (size_t)k;
    return 1;
}

int cairn__memrec_encode(const memrec *r, char **out, size_t *len, cairn__err *e)
{
    sbuf b = {NULL, 0, 0};
    int ok;

    if (r->type != CAIRN_REC_MEMORY || r->metadata != NULL || r->restored_from != 0 ||
        r->id == NULL ||
        r->content == NULL || r->category == NULL || r->access_count > INT64_MAX ||
        !(r->importance >= 0 && r->importance <= 1))
        return cairn__memrec_encode_generic(r, out, len, e);
    /* Sized for the record at once: an import holds 100,000 of these, and
     * doubling from 256 bytes left most at twice their length. */
    ok = sb_room(&b, r->content_len + strlen(r->category) + 224) &&
         sb_lit(&b, "{\"id\":") && sb_str(&b, r->id, strlen(r->id)) &&
         sb_lit(&b, ",\"content\":") && sb_str(&b, r->content, r->content_len) &&
         sb_lit(&b, ",\"category\":") && sb_str(&b, r->category, strlen(r->category)) &&
         sb_lit(&b, ",\"importance\":") && sb_double(&b, r->importance) &&
         sb_lit(&b, ",\"createdAt\":") && sb_int(&b, r->created_at) &&
         sb_lit(&b, ",\"accessedAt\":") && sb_int(&b, r->accessed_at) &&
         sb_lit(&b, ",\"accessCount\":") && sb_int(&b, (int64_t)r->access_count) &&
         sb_lit(&b, ",\"expiresAt\":") &&
         (r->expires_at ? sb_int(&b, r->expires_at) : sb_lit(&b, "null")) &&
         (r->embedder == NULL ||
          (sb_lit(&b, ",\"embedder\":") && sb_str(&b, r->embedder, strlen(r->embedder)) &&
           sb_lit(&b, ",\"dim\":") && sb_int(&b, r->dim))) &&
         (r->batch_n < 2 ||
          (sb_lit(&b, ",\"batch\":[") && sb_int(&b, (int64_t)r->batch_i) && sb_lit(&b, ",") &&
           sb_int(&b, (int64_t)r->batch_n) && sb_lit(&b, "]"))) &&
         sb_lit(&b, "}") && sb_room(&b, 1);
    if (!ok) {
        free(b.p);
        *out = NULL;
        return cairn__fail(e, CAIRN_ENOMEM, "no memory to encode a memory record");
    }
    b.p[b.n] = 0;
    *out = b.p;
    *len = b.n;
    return CAIRN_OK;
}
