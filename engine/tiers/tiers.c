/*
 * tiers.c - what the cognitive tiers share (tiers.h): scopes, their
 * namespaces, token estimates, the fields of tier entries, the running
 * sum of importance since the last reflection, and the tiers' statistics
 * (cairn_tiers_stats).
 *
 * A tier entry is a memory of the namespace "<tier>@<scope>" whose
 * metadata says {"tier": "<tier>", ...} (format-spec/tiers.md). A memory
 * stored there some other way is no entry: every reader skips it.
 */
#include "tiers.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "civil.h"
#include "memvec.h"
#include "utf8.h"

size_t cairn_tokens_estimate(const char *text, size_t len)
{
    size_t chars = 0;
    for (size_t i = 0; text != NULL && i < len; i++)
        chars += ((unsigned char)text[i] & 0xC0) != 0x80; /* not a continuation byte */
    return (chars + 3) / 4;
}

static int name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 100)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

int cairn__tier_scope(cairn_mem *m, const char *scope, tier_scope *s)
{
    const char *slash;
    memset(s, 0, sizeof *s);
    if (scope == NULL)
        scope = "global";
    if (strcmp(scope, "global") == 0) {
        strcpy(s->name, "global");
    } else if (strncmp(scope, "org:", 4) == 0 && name_ok(scope + 4, strlen(scope + 4))) {
        snprintf(s->name, sizeof s->name, "%s", scope);
        snprintf(s->chain[1], sizeof s->chain[1], "global");
        s->n_chain = 1;
    } else if (strncmp(scope, "repo:", 5) == 0 && (slash = strchr(scope + 5, '/')) != NULL &&
               name_ok(scope + 5, (size_t)(slash - scope - 5)) &&
               name_ok(slash + 1, strlen(slash + 1))) {
        snprintf(s->name, sizeof s->name, "%s", scope);
        snprintf(s->chain[1], sizeof s->chain[1], "org:%.*s", (int)(slash - scope - 5), scope + 5);
        snprintf(s->chain[2], sizeof s->chain[2], "global");
        s->n_chain = 2;
    } else {
        return cairn__mem_fail(m, CAIRN_EQUERY, "scope '%.80s': global, org:NAME or "
                               "repo:OWNER/NAME (names: 1..100 of A-Z a-z 0-9 _ . -)", scope);
    }
    strcpy(s->chain[0], s->name);
    s->n_chain++;
    return CAIRN_OK;
}

void cairn__tier_ns(char *buf, size_t cap, const char *tier, const char *scope)
{
    snprintf(buf, cap, "%s@%s", tier, scope);
}

cJSON *cairn__tier_meta(const ment *x, const char *tier)
{
    cJSON *o;
    const char *t;
    if (x->metadata == NULL || strstr(x->metadata, "\"tier\"") == NULL)
        return NULL;
    o = cJSON_Parse(x->metadata);
    t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "tier"));
    if (t == NULL || strcmp(t, tier) != 0) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

const char *cairn__tier_ns_scope(const cairn_mem *m, const ment *x)
{
    const char *at = strchr(m->ns[x->nsi].name, '@');
    return at ? at + 1 : "";
}

int cairn__tier_int(cairn_mem *m, const cJSON *o, const char *name, int64_t lo, int64_t hi,
                    int64_t def, int def_ok, int64_t *v)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
    double d;
    if (j == NULL || cJSON_IsNull(j)) {
        if (!def_ok)
            return cairn__mem_fail(m, CAIRN_EQUERY, "%s: required", name);
        *v = def;
        return CAIRN_OK;
    }
    d = cJSON_GetNumberValue(j);
    if (!cJSON_IsNumber(j) || d != (double)(int64_t)d || d < (double)lo || d > (double)hi)
        return cairn__mem_fail(m, CAIRN_EQUERY, "%s: an integer %" PRId64 "..%" PRId64 " wanted",
                               name, lo, hi);
    *v = (int64_t)d;
    return CAIRN_OK;
}

int cairn__tier_str(cairn_mem *m, const cJSON *o, const char *name, size_t max,
                    const char *def, int required, const char **v)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
    cairn__err e;
    size_t n;
    if (j == NULL || cJSON_IsNull(j)) {
        if (required)
            return cairn__mem_fail(m, CAIRN_EQUERY, "%s: required", name);
        *v = def;
        return CAIRN_OK;
    }
    if (!cJSON_IsString(j))
        return cairn__mem_fail(m, CAIRN_EQUERY, "%s: a string wanted", name);
    n = strlen(j->valuestring);
    if (n == 0 || n > max)
        return cairn__mem_fail(m, CAIRN_EQUERY, "%s: 1..%zu bytes", name, max);
    if (cairn__utf8_check(&e, name, j->valuestring, n) != CAIRN_OK)
        return cairn__mem_fail(m, CAIRN_EQUERY, "%s", e.msg);
    *v = j->valuestring;
    return CAIRN_OK;
}

int cairn__tier_parse_time(const char *s, int64_t *ms)
{
    int y, mo, d, h, mi, sec, n = 0, frac = 0, digits = 0;
    const char *p;
    if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 ||
        n != 19 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 ||
        y < 1970 || h < 0 || mi < 0 || sec < 0)
        return -1;
    p = s + n;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 3)
                frac = frac * 10 + (*p - '0');
        if (digits == 0)
            return -1;
        for (; digits < 3; digits++)
            frac *= 10;
    }
    if (!(strcmp(p, "Z") == 0 || strcmp(p, "+00:00") == 0))
        return -1;
    *ms = ((cairn__days_from_civil(y, (unsigned)mo, (unsigned)d) * 24 + h) * 60 + mi) * 60000 +
          (int64_t)sec * 1000 + frac;
    return 0;
}

void cairn__tier_uuid(char *buf)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t b[16];
    size_t o = 0;
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        /* no entropy source: time and address, unique enough for an id */
        uint64_t a = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)buf, c = XXH3_64bits(&a, 8) ^ a;
        memcpy(b, &a, 8);
        memcpy(b + 8, &c, 8);
    }
    b[6] = (uint8_t)((b[6] & 0x0F) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3F) | 0x80);
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            buf[o++] = '-';
        buf[o++] = hex[b[i] >> 4];
        buf[o++] = hex[b[i] & 15];
    }
    buf[o] = 0;
}

void cairn__tier_mem_id(const char *ns, const char *eid, char *out)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t h = XXH3_64bits_withSeed(eid, strlen(eid), XXH3_64bits(ns, strlen(ns)));
    out[0] = 't';
    for (int i = 0; i < 16; i++)
        out[1 + i] = hex[(h >> (60 - 4 * i)) & 15];
    out[17] = 0;
}

tier_settings cairn__tier_settings(cairn_mem *m)
{
    cairn_config c;
    tier_settings t = {CAIRN_REFLECTION_THRESHOLD, CAIRN_CORE_BUDGET, CAIRN_CORE_SECTION_BUDGET};
    memset(&c, 0, sizeof c);
    if (cairn_config_get(m->db, &c) == CAIRN_OK && c.reflect_threshold != 0) {
        t.reflect = c.reflect_threshold;
        t.core = c.core_budget;
        t.section = c.core_section_budget;
    }
    return t;
}

int cairn__tier_emit(cairn_mem *m, cJSON *o, char **out)
{
    char *s;
    if (o == NULL)
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    if (out == NULL) {
        cJSON_Delete(o);
        return CAIRN_OK;
    }
    s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (s == NULL)
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    *out = s;
    return CAIRN_OK;
}

/* ---- the sum of importance since the last reflection ---------------------- */

static int on_reflection(void *user, cairn_mem *m, const ment *x)
{
    struct tier_sum *t = user;
    cJSON *meta = cairn__tier_meta(x, TIER_REFLECTION);
    const char *ts;
    (void)m;
    if (meta == NULL)
        return 0;
    if (x->seq > t->limit) {
        cJSON_Delete(meta);
        return 0; /* after the fold the sum is taken at: the next call's */
    }
    if (!t->has_refl || x->seq > t->refl_seq) {
        t->has_refl = 1;
        t->refl_seq = x->seq;
        t->refl_cycle = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(meta, "cycle"));
        ts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "timestamp"));
        if (ts == NULL || cairn__tier_parse_time(ts, &t->refl_time) != 0)
            t->refl_time = x->created;
        t->acc = 0; /* what came before it is reflected on */
    }
    cJSON_Delete(meta);
    return 0;
}

static int on_stream(void *user, cairn_mem *m, const ment *x)
{
    struct tier_sum *t = user;
    cJSON *meta;
    (void)m;
    if ((t->has_refl && x->seq < t->refl_seq) || x->seq > t->limit)
        return 0;
    if ((meta = cairn__tier_meta(x, TIER_STREAM)) == NULL)
        return 0;
    t->acc += (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(meta, "importance"));
    cJSON_Delete(meta);
    return 0;
}

/* The handle keeps the sum of one scope, taken up to the memory seq
 * `upto`: a call reads only what was stored after it (a new reflection
 * resets the sum). An entry removed after it was counted stays counted:
 * the sum is of importance logged, as the stream's reflection trigger
 * wants. */
int cairn__tier_reflect_state(cairn_mem *m, const char *scope, tier_reflect_state *out)
{
    struct tier_sum *t = &m->tier_sum;
    char rns[CAIRN_SCOPE_MAX + 16], sns[CAIRN_SCOPE_MAX + 16];
    const char *one[1];
    uint64_t from;
    int rc;

    pthread_mutex_lock(&m->tier_mu);
    if (!t->valid || strcmp(t->scope, scope) != 0) {
        memset(t, 0, sizeof *t);
        snprintf(t->scope, sizeof t->scope, "%s", scope);
    }
    from = t->upto + 1;
    /* Catch up once and take the sum up to there: the scans may fold more
     * (other processes write), which the next call counts. */
    pthread_mutex_lock(&m->mu);
    rc = cairn__mem_catch_up(m);
    t->limit = m->folded;
    pthread_mutex_unlock(&m->mu);
    if (rc != CAIRN_OK) {
        t->valid = 0;
        pthread_mutex_unlock(&m->tier_mu);
        return rc;
    }
    cairn__tier_ns(rns, sizeof rns, TIER_REFLECTION, scope);
    cairn__tier_ns(sns, sizeof sns, TIER_STREAM, scope);
    one[0] = rns;
    rc = cairn__mem_scan(m, one, 1, from, on_reflection, t);
    if (rc == CAIRN_OK) {
        one[0] = sns;
        rc = cairn__mem_scan(m, one, 1, from > t->refl_seq ? from : t->refl_seq + 1, on_stream, t);
    }
    if (rc == CAIRN_OK) {
        t->upto = t->limit; /* every memory stored up to here is counted */
        t->valid = 1;
        out->accumulated = t->acc;
        out->last_cycle = t->refl_cycle;
        out->last_time = t->refl_time;
        out->last_seq = t->refl_seq;
        out->has_last = t->has_refl;
    } else {
        t->valid = 0;
    }
    pthread_mutex_unlock(&m->tier_mu);
    return rc;
}

static void add_time(cJSON *o, const char *name, int64_t ms, int has)
{
    char buf[40];
    if (!has) {
        cJSON_AddNullToObject(o, name);
        return;
    }
    cairn__iso_time(ms, buf, sizeof buf);
    cJSON_AddStringToObject(o, name, buf);
}

/* ---- recording a reflection ------------------------------------------------ */

int cairn_reflection_add(cairn_mem *m, const char *scope, const char *reflection_json,
                         char **out_json)
{
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    tier_scope sc;
    cJSON *in = NULL, *meta = NULL, *o;
    cairn_memory *mem = NULL;
    const char *content, *role, *outcome, *worked, *eid, *ts;
    char ns[CAIRN_SCOPE_MAX + 16], uuid[40], mid[CAIRN_MEM_ID_MAX + 1], *meta_text = NULL;
    int64_t cycle, ts_ms;
    int rc, existed = 0;

    if (out_json != NULL)
        *out_json = NULL;
    if ((rc = cairn__tier_scope(m, scope, &sc)) != CAIRN_OK)
        return rc;
    if (reflection_json == NULL || (in = cJSON_Parse(reflection_json)) == NULL || !cJSON_IsObject(in)) {
        cJSON_Delete(in);
        return cairn__mem_fail(m, CAIRN_EQUERY, "the reflection is not a JSON object");
    }
    if ((rc = cairn__tier_int(m, in, "cycle", 0, 9007199254740992ll, 0, 0, &cycle)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "content", 1u << 20, NULL, 1, &content)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "role", 64, NULL, 0, &role)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "outcome", 64, NULL, 0, &outcome)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "whatWorked", 1u << 16, NULL, 0, &worked)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "id", 128, NULL, 0, &eid)) != CAIRN_OK ||
        (rc = cairn__tier_str(m, in, "timestamp", 64, NULL, 0, &ts)) != CAIRN_OK)
        goto out;
    if (ts != NULL && cairn__tier_parse_time(ts, &ts_ms) != 0) {
        rc = cairn__mem_fail(m, CAIRN_EQUERY, "timestamp: ISO 8601 UTC wanted, not '%.40s'", ts);
        goto out;
    }
    if (eid == NULL) {
        cairn__tier_uuid(uuid);
        eid = uuid;
    }
    cairn__tier_ns(ns, sizeof ns, TIER_REFLECTION, sc.name);
    cairn__tier_mem_id(ns, eid, mid);
    meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "tier", TIER_REFLECTION);
    cJSON_AddStringToObject(meta, "entryId", eid);
    cJSON_AddNumberToObject(meta, "cycle", (double)cycle);
    if (role != NULL)
        cJSON_AddStringToObject(meta, "role", role);
    if (outcome != NULL)
        cJSON_AddStringToObject(meta, "outcome", outcome);
    if (worked != NULL)
        cJSON_AddStringToObject(meta, "whatWorked", worked);
    if (ts != NULL)
        cJSON_AddStringToObject(meta, "timestamp", ts);
    if ((meta_text = cJSON_PrintUnformatted(meta)) == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        goto out;
    }
    so.ns = ns;
    so.category = "reflection";
    so.metadata = meta_text;
    so.keep_duplicate = 1;
    so.no_limit = 1;
    so.id = mid;
    if ((rc = cairn_mem_store(m, content, &so, &mem, &existed)) != CAIRN_OK) {
        if (rc == CAIRN_EEXIST)
            rc = cairn__mem_fail(m, CAIRN_EEXIST, "reflection %.128s is recorded with other content", eid);
        goto out;
    }
    if (out_json != NULL) {
        cJSON *r;
        o = cJSON_CreateObject();
        r = cJSON_AddObjectToObject(o, "reflection");
        cJSON_AddStringToObject(r, "id", eid);
        cJSON_AddNumberToObject(r, "cycle", (double)cycle);
        cJSON_AddStringToObject(r, "content", content);
        if (role != NULL)
            cJSON_AddStringToObject(r, "role", role);
        if (outcome != NULL)
            cJSON_AddStringToObject(r, "outcome", outcome);
        if (worked != NULL)
            cJSON_AddStringToObject(r, "whatWorked", worked);
        add_time(r, "timestamp", ts != NULL ? ts_ms : mem->created_at, 1);
        cJSON_AddStringToObject(r, "scope", sc.name);
        cJSON_AddStringToObject(r, "memoryId", mem->id);
        cJSON_AddBoolToObject(o, "existed", existed);
        rc = cairn__tier_emit(m, o, out_json);
    }
out:
    cairn_mem_free(mem);
    free(meta_text);
    cJSON_Delete(meta);
    cJSON_Delete(in);
    return rc;
}

/* ---- statistics ------------------------------------------------------------ */

typedef struct stats_scan {
    int64_t entries, oldest, newest, tokens;
    int has_cycle;
    int64_t archival, indexed, last_indexed;
    int64_t core_tokens, threads, blockers;
} stats_scan;

static int on_stat_stream(void *user, cairn_mem *m, const ment *x)
{
    stats_scan *s = user;
    cJSON *meta = cairn__tier_meta(x, TIER_STREAM);
    int64_t c;
    (void)m;
    if (meta == NULL)
        return 0;
    c = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(meta, "cycle"));
    s->entries++;
    s->tokens += (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(meta, "tokenEstimate"));
    if (!s->has_cycle || c < s->oldest)
        s->oldest = c;
    if (!s->has_cycle || c > s->newest)
        s->newest = c;
    s->has_cycle = 1;
    cJSON_Delete(meta);
    return 0;
}

static int on_stat_archival(void *user, cairn_mem *m, const ment *x)
{
    stats_scan *s = user;
    cJSON *meta = cairn__tier_meta(x, TIER_ARCHIVAL);
    const float *row = NULL;
    if (meta == NULL)
        return 0;
    s->archival++;
    if (cairn__mem_vec_get(m, x->nsi, x->seq, &row) == CAIRN_OK && row != NULL) {
        s->indexed++;
        if (x->created > s->last_indexed)
            s->last_indexed = x->created;
    }
    cJSON_Delete(meta);
    return 0;
}

static int on_stat_core(void *user, cairn_mem *m, const ment *x)
{
    stats_scan *s = user;
    cJSON *meta = cairn__tier_meta(x, TIER_CORE);
    const char *sec, *text;
    int rc;
    if (meta == NULL)
        return 0;
    if ((rc = cairn__mem_text(m, x, &text)) != CAIRN_OK) {
        cJSON_Delete(meta);
        return rc;
    }
    sec = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "section"));
    s->core_tokens += (int64_t)cairn_tokens_estimate(text, x->content_len);
    if (sec != NULL && strcmp(sec, "threads") == 0)
        s->threads++;
    if (sec != NULL && strcmp(sec, "blockers") == 0)
        s->blockers++;
    cJSON_Delete(meta);
    return 0;
}

int cairn_tiers_stats(cairn_mem *m, const char *scope, char **out_json)
{
    tier_scope sc;
    stats_scan s;
    tier_reflect_state rs;
    tier_settings ts;
    char ns[CAIRN_SCOPE_MAX + 16];
    const char *one[1] = {ns};
    cJSON *o, *r;
    int rc;

    *out_json = NULL;
    memset(&s, 0, sizeof s);
    if ((rc = cairn__tier_scope(m, scope, &sc)) != CAIRN_OK)
        return rc;
    cairn__tier_ns(ns, sizeof ns, TIER_STREAM, sc.name);
    rc = cairn__mem_scan(m, one, 1, 0, on_stat_stream, &s);
    cairn__tier_ns(ns, sizeof ns, TIER_ARCHIVAL, sc.name);
    if (rc == CAIRN_OK)
        rc = cairn__mem_scan(m, one, 1, 0, on_stat_archival, &s);
    cairn__tier_ns(ns, sizeof ns, TIER_CORE, sc.name);
    if (rc == CAIRN_OK)
        rc = cairn__mem_scan(m, one, 1, 0, on_stat_core, &s);
    if (rc == CAIRN_OK)
        rc = cairn__tier_reflect_state(m, sc.name, &rs);
    if (rc != CAIRN_OK)
        return rc;
    ts = cairn__tier_settings(m);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "scope", sc.name);
    r = cJSON_AddObjectToObject(o, "recall");
    cJSON_AddNumberToObject(r, "entryCount", (double)s.entries);
    if (s.has_cycle) {
        cJSON_AddNumberToObject(r, "oldestCycle", (double)s.oldest);
        cJSON_AddNumberToObject(r, "newestCycle", (double)s.newest);
    } else {
        cJSON_AddNullToObject(r, "oldestCycle");
        cJSON_AddNullToObject(r, "newestCycle");
    }
    cJSON_AddNumberToObject(r, "totalTokens", (double)s.tokens);
    r = cJSON_AddObjectToObject(o, "archival");
    cJSON_AddNumberToObject(r, "entryCount", (double)s.archival);
    cJSON_AddNumberToObject(r, "indexedDocs", (double)s.indexed);
    add_time(r, "lastIndexed", s.last_indexed, s.indexed > 0);
    r = cJSON_AddObjectToObject(o, "core");
    cJSON_AddNumberToObject(r, "tokenUsage", (double)s.core_tokens);
    cJSON_AddNumberToObject(r, "tokenBudget", (double)ts.core);
    cJSON_AddNumberToObject(r, "threadCount", (double)s.threads);
    cJSON_AddNumberToObject(r, "blockerCount", (double)s.blockers);
    r = cJSON_AddObjectToObject(o, "lastReflection");
    if (rs.has_last)
        cJSON_AddNumberToObject(r, "cycle", (double)rs.last_cycle);
    else
        cJSON_AddNullToObject(r, "cycle");
    add_time(r, "timestamp", rs.last_time, rs.has_last);
    cJSON_AddNumberToObject(r, "importanceAccumulated", (double)rs.accumulated);
    cJSON_AddNumberToObject(r, "threshold", (double)ts.reflect);
    cJSON_AddBoolToObject(r, "due", rs.accumulated >= ts.reflect);
    return cairn__tier_emit(m, o, out_json);
}
