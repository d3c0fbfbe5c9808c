/*
 * hole.c - see hole.h and format-spec/compaction.md: the record that
 * stands for records compaction dropped.
 */
#include "hole.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "batch.h"
#include "bytes.h"
#include "record.h"

/* An integer 0 .. 2^53 (JSON numbers are exact up to there). */
static int exact_u64(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > CAIRN_BATCH_MAX ||
        v->valuedouble != floor(v->valuedouble))
        return 0;
    *out = (uint64_t)v->valuedouble;
    return 1;
}

static int field_u64(const cJSON *root, const char *name, int required, uint64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    *out = 0;
    if (v == NULL)
        return !required;
    return exact_u64(v, out);
}

/* Check an "ends" array against the hole's range; 1 if valid. Calls fn for
 * each [S,N] when fn is not NULL (stops when it returns nonzero). */
static int each_end(const cJSON *ends, const cairn__hole *h,
                    int (*fn)(void *user, uint64_t s, uint64_t n), void *user)
{
    const cJSON *x;
    if (ends == NULL)
        return 1;
    if (!cJSON_IsArray(ends))
        return 0;
    cJSON_ArrayForEach(x, ends)
    {
        uint64_t s, n;
        if (!cJSON_IsArray(x) || cJSON_GetArraySize(x) != 2 || !exact_u64(x->child, &s) ||
            !exact_u64(x->child->next, &n) || n < 2 || s < h->seq || s > h->upto)
            return 0;
        if (fn != NULL && fn(user, s, n))
            break;
    }
    return 1;
}

/* A checksum as 16 lowercase hex digits. */
static int hex_sum(const cJSON *v, uint64_t *out)
{
    uint64_t x = 0;
    if (!cJSON_IsString(v) || strlen(v->valuestring) != 16)
        return 0;
    for (int i = 0; i < 16; i++) {
        char c = v->valuestring[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return 0;
        x = x << 4 | (uint64_t)d;
    }
    *out = x;
    return 1;
}

/* Check an "anchors" array; 1 if valid. With want != 0, *sum gets the
 * checksum of want and *found 1 if it is listed. */
static int each_anchor(const cJSON *anchors, const cairn__hole *h, uint64_t want, uint64_t *sum,
                       int *found)
{
    const cJSON *x;
    if (anchors == NULL)
        return 1;
    if (!cJSON_IsArray(anchors))
        return 0;
    cJSON_ArrayForEach(x, anchors)
    {
        uint64_t s, v;
        if (!cJSON_IsArray(x) || cJSON_GetArraySize(x) != 2 || !exact_u64(x->child, &s) ||
            !hex_sum(x->child->next, &v) || s < h->seq || s > h->upto)
            return 0;
        if (want != 0 && s == want) {
            *sum = v;
            *found = 1;
        }
    }
    return 1;
}

/* "chain": 64 lowercase hex digits; 1 and out when valid. */
static int chain_hex(const cJSON *v, uint8_t out[32])
{
    static const char d[] = "0123456789abcdef";
    const char *s;
    if (!cJSON_IsString(v) || (s = v->valuestring) == NULL || strlen(s) != 64)
        return 0;
    for (size_t i = 0; i < 64; i++) {
        const char *p = s[i] ? strchr(d, s[i]) : NULL;
        if (p == NULL)
            return 0;
        if (i % 2 == 0)
            out[i / 2] = (uint8_t)((p - d) << 4);
        else
            out[i / 2] |= (uint8_t)(p - d);
    }
    return 1;
}

/* The chain members of a parsed hole: 1 (and *hc when not NULL, its
 * leaves malloc'd), 0 none, -1 malformed. h: its numbers, for the count of
 * leaves. */
static int chain_members(const cJSON *root, const cairn__hole *h, cairn__hole_chain *hc)
{
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(root, "chain_in");
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(root, "chain");
    const cJSON *leaves = cJSON_GetObjectItemCaseSensitive(root, "leaves"), *x;
    cairn__hole_chain tmp;
    size_t i = 0;

    if (hc == NULL)
        hc = &tmp;
    memset(hc, 0, sizeof *hc);
    if (in == NULL && out == NULL && leaves == NULL)
        return 0;
    if (!chain_hex(in, hc->in) || !chain_hex(out, hc->out))
        return -1;
    if (leaves == NULL)
        return 1;
    if (!cJSON_IsArray(leaves) || (uint64_t)cJSON_GetArraySize(leaves) != h->records)
        return -1;
    if (hc != &tmp && (hc->leaves = malloc(32 * h->records)) == NULL)
        return -1;
    cJSON_ArrayForEach(x, leaves)
    {
        uint8_t d[32];
        if (!chain_hex(x, d)) {
            cairn__hole_chain_free(hc);
            return -1;
        }
        if (hc->leaves != NULL)
            memcpy(hc->leaves + 32 * i, d, 32);
        i++;
    }
    hc->n_leaves = i;
    return 1;
}

static int parse(const char *json, size_t len, uint64_t seq, cairn__hole *h, cJSON **root_out)
{
    cJSON *root = cJSON_ParseWithLength(json, len);
    const cJSON *why;
    int ok = cJSON_IsObject(root);

    memset(h, 0, sizeof *h);
    h->seq = seq;
    ok = ok && field_u64(root, "upto", 1, &h->upto) && field_u64(root, "records", 1, &h->records) &&
         field_u64(root, "bytes", 1, &h->bytes) && field_u64(root, "deaths", 0, &h->deaths);
    ok = ok && h->upto >= seq && h->records >= 1 && h->records - 1 <= h->upto - seq &&
         h->bytes >= h->records * REC_OVERHEAD;
    why = ok ? cJSON_GetObjectItemCaseSensitive(root, "why") : NULL;
    ok = ok && (why == NULL || cJSON_IsString(why)) && chain_members(root, h, NULL) >= 0 &&
         each_end(cJSON_GetObjectItemCaseSensitive(root, "ends"), h, NULL, NULL) &&
         each_anchor(cJSON_GetObjectItemCaseSensitive(root, "anchors"), h, 0, NULL, NULL);
    if (!ok) {
        cJSON_Delete(root);
        return 0;
    }
    *root_out = root;
    return 1;
}

int cairn__hole_decode(const char *json, size_t len, uint64_t seq, cairn__hole *h,
                       cairn__err *e)
{
    cJSON *root = NULL;
    if (!parse(json, len, seq, h, &root))
        return cairn__fail(e, CAIRN_ECORRUPT, "compaction record %llu: invalid payload",
                           (unsigned long long)seq);
    cJSON_Delete(root);
    return CAIRN_OK;
}

typedef struct end_probe {
    uint64_t s, n;
    int found;
} end_probe;

static int probe_end(void *user, uint64_t s, uint64_t n)
{
    end_probe *p = user;
    p->found = p->s == s && p->n == n;
    return p->found;
}

int cairn__hole_has_end(const char *json, size_t len, uint64_t end, uint64_t n)
{
    cairn__hole h;
    cJSON *root = NULL;
    end_probe p = {end, n, 0};
    /* A hole's seq is not needed to find an end in it: any seq <= end. */
    if (!parse(json, len, 1, &h, &root))
        return 0;
    each_end(cJSON_GetObjectItemCaseSensitive(root, "ends"), &h, probe_end, &p);
    cJSON_Delete(root);
    return p.found;
}

int cairn__hole_anchor(const char *json, size_t len, uint64_t seq, uint64_t *sum)
{
    cairn__hole h;
    cJSON *root = NULL;
    int found = 0;
    if (!parse(json, len, 1, &h, &root))
        return 0;
    each_anchor(cJSON_GetObjectItemCaseSensitive(root, "anchors"), &h, seq, sum, &found);
    cJSON_Delete(root);
    return found;
}

int cairn__hole_chain_read(const char *json, size_t len, cairn__hole_chain *hc)
{
    cairn__hole h;
    cJSON *root = NULL;
    int r;
    memset(hc, 0, sizeof *hc);
    if (!parse(json, len, 0, &h, &root))
        return -1;
    r = chain_members(root, &h, hc);
    cJSON_Delete(root);
    return r;
}

void cairn__hole_chain_free(cairn__hole_chain *hc)
{
    free(hc->leaves);
    hc->leaves = NULL;
    hc->n_leaves = 0;
}

int cairn__holeb_leaf(cairn__holeb *b, const uint8_t d[32])
{
    if (b->n_leaves == b->leaves_cap) {
        size_t cap = b->leaves_cap ? 2 * b->leaves_cap : 16;
        uint8_t *p = cairn__realloc(b->a, b->leaves, 32 * cap);
        if (p == NULL)
            return CAIRN_ENOMEM;
        b->leaves = p;
        b->leaves_cap = cap;
    }
    memcpy(b->leaves + 32 * b->n_leaves++, d, 32);
    return CAIRN_OK;
}

int cairn__holeb_anchor(cairn__holeb *b, uint64_t seq, uint64_t sum)
{
    if (cairn__grow(b->a, (void **)&b->anchors, &b->anchors_cap, b->n_anchors + 1,
                    sizeof *b->anchors) != CAIRN_OK)
        return CAIRN_ENOMEM;
    b->anchors[b->n_anchors][0] = seq;
    b->anchors[b->n_anchors][1] = sum;
    b->n_anchors++;
    return CAIRN_OK;
}

static int add_end(cairn__holeb *b, uint64_t s, uint64_t n)
{
    if (cairn__grow(b->a, (void **)&b->ends, &b->ends_cap, b->n_ends + 1,
                    sizeof *b->ends) != CAIRN_OK)
        return CAIRN_ENOMEM;
    b->ends[b->n_ends][0] = s;
    b->ends[b->n_ends][1] = n;
    b->n_ends++;
    return CAIRN_OK;
}

static void gather(cairn__holeb *b, uint64_t seq, uint64_t upto, int64_t ts)
{
    if (b->h.records == 0) {
        b->h.seq = seq;
        b->ts = ts;
    }
    b->h.upto = upto;
}

int cairn__holeb_add(cairn__holeb *b, const cairn_record *rec, size_t len, int death)
{
    /* The commit mark of the engine's JSON records (batch.h): only a
     * record ending a commit of n >= 2 matters to a reader. */
    if (rec->json_len > 0 && cairn__contains(rec->json, rec->json_len, "\"batch\"", 7)) {
        cJSON *root = cJSON_ParseWithLength(rec->json, rec->json_len);
        uint64_t i, n;
        int rc = CAIRN_OK;
        if (cJSON_IsObject(root) && cairn__batch_get(root, &i, &n) == 1 && n >= 2 && i == n - 1)
            rc = add_end(b, rec->seq, n);
        cJSON_Delete(root);
        if (rc != CAIRN_OK)
            return rc;
    }
    gather(b, rec->seq, rec->seq, rec->ts_ms);
    b->h.records++;
    b->h.bytes += len;
    b->h.deaths += death != 0;
    return CAIRN_OK;
}

/* An integer as its exact digits (cJSON prints some above 2^52 1 or 2
 * off: it keeps 15 significant digits when they read back within a
 * relative epsilon). */
static void to_hex(const uint8_t d[32], char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[64] = '\0';
}

static cJSON *exact(uint64_t v)
{
    char d[24];
    snprintf(d, sizeof d, "%llu", (unsigned long long)v);
    return cJSON_CreateRaw(d);
}

static int add_exact(cJSON *o, const char *name, uint64_t v)
{
    cJSON *n = exact(v);
    return n != NULL && cJSON_AddItemToObject(o, name, n);
}

int cairn__holeb_emit(cairn__holeb *b, uint64_t salt, const char *why, uint8_t **out,
                      size_t *len)
{
    cJSON *root = cJSON_CreateObject(), *ends = NULL;
    char *json = NULL;
    cairn_entry en;
    int rc = CAIRN_ENOMEM;

    *out = NULL;
    *len = 0;
    if (root == NULL || !add_exact(root, "upto", b->h.upto) ||
        !add_exact(root, "records", b->h.records) || !add_exact(root, "bytes", b->h.bytes) ||
        (b->h.deaths && !add_exact(root, "deaths", b->h.deaths)))
        goto done;
    if (b->n_ends > 0) {
        if ((ends = cJSON_AddArrayToObject(root, "ends")) == NULL)
            goto done;
        for (size_t i = 0; i < b->n_ends; i++) {
            cJSON *pair = cJSON_CreateArray();
            if (pair == NULL)
                goto done;
            cJSON_AddItemToArray(ends, pair);
            if (!cJSON_AddItemToArray(pair, exact(b->ends[i][0])) ||
                !cJSON_AddItemToArray(pair, exact(b->ends[i][1])))
                goto done;
        }
    }
    if (b->n_anchors > 0) {
        cJSON *an = cJSON_AddArrayToObject(root, "anchors");
        if (an == NULL)
            goto done;
        for (size_t i = 0; i < b->n_anchors; i++) {
            cJSON *pair = cJSON_CreateArray();
            char hex[17];
            if (pair == NULL)
                goto done;
            cJSON_AddItemToArray(an, pair);
            snprintf(hex, sizeof hex, "%016llx", (unsigned long long)b->anchors[i][1]);
            if (!cJSON_AddItemToArray(pair, exact(b->anchors[i][0])) ||
                !cJSON_AddItemToArray(pair, cJSON_CreateString(hex)))
                goto done;
        }
    }
    if (b->has_chain) {
        char hex[65];
        cJSON *lv;
        to_hex(b->chain_in, hex);
        if (!cJSON_AddStringToObject(root, "chain_in", hex))
            goto done;
        to_hex(b->chain, hex);
        if (!cJSON_AddStringToObject(root, "chain", hex))
            goto done;
        if (b->leaves_on && b->n_leaves == b->h.records) {
            if ((lv = cJSON_AddArrayToObject(root, "leaves")) == NULL)
                goto done;
            for (size_t i = 0; i < b->n_leaves; i++) {
                to_hex(b->leaves + 32 * i, hex);
                if (!cJSON_AddItemToArray(lv, cJSON_CreateString(hex)))
                    goto done;
            }
        }
    }
    if (why != NULL && !cJSON_AddStringToObject(root, "why", why))
        goto done;
    if ((json = cJSON_PrintUnformatted(root)) == NULL)
        goto done;
    memset(&en, 0, sizeof en);
    en.type = CAIRN_REC_COMPACTED;
    en.json = json;
    en.json_len = strlen(json);
    if ((rc = cairn__record_size(&en, len)) != CAIRN_OK)
        goto done;
    if ((*out = cairn__malloc(b->a, *len)) == NULL) {
        rc = CAIRN_ENOMEM;
        goto done;
    }
    cairn__record_encode(*out, &en, b->h.seq, b->ts, salt);
    memset(&b->h, 0, sizeof b->h);
    b->n_ends = 0;
    b->n_anchors = 0;
    b->n_leaves = 0;
    rc = CAIRN_OK;
done:
    cJSON_free(json);
    cJSON_Delete(root);
    return rc;
}

void cairn__holeb_free(cairn__holeb *b)
{
    cairn__free(b->a, b->ends);
    cairn__free(b->a, b->anchors);
    cairn__free(b->a, b->leaves);
    b->ends = NULL;
    b->anchors = NULL;
    b->leaves = NULL;
    b->n_ends = b->ends_cap = b->n_anchors = b->anchors_cap = 0;
    b->n_leaves = b->leaves_cap = 0;
}
