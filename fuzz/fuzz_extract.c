/*
 * fuzz_extract.c - the session-log -> episode extractor
 * (engine/reflexion/extract*.c, cairn__extract_episode) over arbitrary
 * bytes. Byte 0 picks the log's name: bit 0 a ".json" or a ".md" name,
 * bit 1 a name with a YYYY-MM-DD prefix or one without (so the log must
 * give the date itself); the rest is the log.
 *
 * Invariants: no crash, leak or read outside the input; only CAIRN_OK,
 * CAIRN_EINVAL or CAIRN_ENOMEM; a failure leaves *out NULL and says why; a
 * success is the episode shape with the right JSON types: id "episode-" +
 * session, a well-formed UTC timestamp everywhere, outcome / event / decision
 * types from their sets, event ids e001.. in order, decision ids d001..,
 * every caused_by / leads_to / effects entry naming an existing event or
 * decision, metrics whole numbers in 0..INT32_MAX and no fewer than the
 * events they count; every string valid UTF-8 of at most 1000 bytes without
 * NUL, every array at most 1000 items; and the same input gives the same
 * episode twice.
 */
#include "fuzz.h"

#include <limits.h>

#include "extract.h"

static const char *const OUTCOMES[] = {"success", "partial", "failure", NULL};
static const char *const ETYPES[] = {"tool_call", "commit", "error", "milestone", "test",
    "handoff", NULL};
static const char *const DTYPES[] = {"design", "implementation", "test", "recovery", "routing",
    NULL};

static int one_of(const char *s, const char *const *set)
{
    for (; *set != NULL; set++)
        if (strcmp(s, *set) == 0)
            return 1;
    return 0;
}

static int utf8_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        int k = c < 0x80 ? 1 : c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3
              : c >= 0xF0 && c < 0xF5 ? 4 : 0;
        if (k == 0)
            return 0;
        for (int i = 1; i < k; i++)
            if ((p[i] & 0xC0) != 0x80)
                return 0;
        if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0) ||
            (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90))
            return 0;
        p += k;
    }
    return 1;
}

/* Every string valid and short, every array short, all the way down. */
static void check_tree(const cJSON *v, int depth)
{
    const cJSON *it;
    FUZZ_CHECK(depth < 8);
    if (cJSON_IsString(v)) {
        FUZZ_CHECK(v->valuestring != NULL && strlen(v->valuestring) <= EXTRACT_STR_MAX);
        FUZZ_CHECK(utf8_ok(v->valuestring));
    }
    if (cJSON_IsArray(v))
        FUZZ_CHECK(cJSON_GetArraySize(v) <= EXTRACT_ARR_MAX);
    cJSON_ArrayForEach(it, v)
        check_tree(it, depth + 1);
}

static const char *get_s(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    FUZZ_CHECK(cJSON_IsString(v));
    return v->valuestring;
}

static const cJSON *get_a(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    FUZZ_CHECK(cJSON_IsArray(v));
    return v;
}

static void check_ts(const char *s)
{
    static const char pat[] = "dddd-dd-ddTdd:dd:ddZ";
    FUZZ_CHECK(strlen(s) == 20);
    for (int i = 0; i < 20; i++)
        FUZZ_CHECK(pat[i] == 'd' ? s[i] >= '0' && s[i] <= '9' : s[i] == pat[i]);
    FUZZ_CHECK(memcmp(s, "0000", 4) != 0);
    FUZZ_CHECK((s[5] - '0') * 10 + (s[6] - '0') >= 1 && (s[5] - '0') * 10 + (s[6] - '0') <= 12);
    FUZZ_CHECK((s[8] - '0') * 10 + (s[9] - '0') >= 1 && (s[8] - '0') * 10 + (s[9] - '0') <= 31);
    FUZZ_CHECK((s[11] - '0') * 10 + (s[12] - '0') <= 23);
    FUZZ_CHECK(s[14] <= '5' && s[17] <= '5');
}

/* An id "<c>NNN" (at least three digits) numbered i + 1. */
static void check_id(const char *id, char c, int i)
{
    char want[16];
    snprintf(want, sizeof want, "%c%03d", c, i + 1);
    FUZZ_CHECK(strcmp(id, want) == 0);
}

/* A reference to an event (e...) or decision (d...) that exists. */
static void check_ref(const cJSON *r, int nev, int ndc, int events_only)
{
    const char *s;
    int v;
    FUZZ_CHECK(cJSON_IsString(r));
    s = r->valuestring;
    FUZZ_CHECK(s[0] == 'e' || (!events_only && s[0] == 'd'));
    v = atoi(s + 1);
    FUZZ_CHECK(v >= 1 && v <= (s[0] == 'e' ? nev : ndc));
}

static void check_episode(const cJSON *ep, const char *sid)
{
    const cJSON *evs = get_a(ep, "events"), *dcs = get_a(ep, "decisions"), *it, *m, *r;
    int nev = cJSON_GetArraySize(evs), ndc = cJSON_GetArraySize(dcs), i = 0;
    int ncommit = 0, ntool = 0, nerr = 0;
    static const char *const MET[] = {"duration_minutes", "tool_calls", "errors", "recoveries",
        "commits", "files_changed", NULL};

    FUZZ_CHECK(cJSON_IsObject(ep));
    check_tree(ep, 0);
    FUZZ_CHECK(strcmp(get_s(ep, "session"), sid) == 0);
    FUZZ_CHECK(strncmp(get_s(ep, "id"), "episode-", 8) == 0 &&
               strcmp(get_s(ep, "id") + 8, sid) == 0);
    check_ts(get_s(ep, "timestamp"));
    FUZZ_CHECK(one_of(get_s(ep, "outcome"), OUTCOMES));
    FUZZ_CHECK(get_s(ep, "task")[0] != 0);
    cJSON_ArrayForEach(it, get_a(ep, "lessons"))
        FUZZ_CHECK(cJSON_IsString(it) && it->valuestring[0] != 0);
    cJSON_ArrayForEach(it, evs) {
        const char *type = get_s(it, "type");
        FUZZ_CHECK(cJSON_IsObject(it));
        check_id(get_s(it, "id"), 'e', i++);
        check_ts(get_s(it, "timestamp"));
        FUZZ_CHECK(one_of(type, ETYPES));
        FUZZ_CHECK(get_s(it, "content")[0] != 0);
        cJSON_ArrayForEach(r, get_a(it, "caused_by"))
            check_ref(r, nev, ndc, 0);
        cJSON_ArrayForEach(r, get_a(it, "leads_to"))
            check_ref(r, nev, ndc, 1);
        ncommit += strcmp(type, "commit") == 0;
        ntool += strcmp(type, "tool_call") == 0;
        nerr += strcmp(type, "error") == 0;
    }
    i = 0;
    cJSON_ArrayForEach(it, dcs) {
        FUZZ_CHECK(cJSON_IsObject(it));
        check_id(get_s(it, "id"), 'd', i++);
        check_ts(get_s(it, "timestamp"));
        FUZZ_CHECK(one_of(get_s(it, "type"), DTYPES));
        FUZZ_CHECK(one_of(get_s(it, "outcome"), OUTCOMES));
        FUZZ_CHECK(get_s(it, "chosen")[0] != 0);
        (void)get_s(it, "context");
        (void)get_s(it, "rationale");
        cJSON_ArrayForEach(r, get_a(it, "effects"))
            check_ref(r, nev, ndc, 1);
    }
    m = cJSON_GetObjectItemCaseSensitive(ep, "metrics");
    FUZZ_CHECK(cJSON_IsObject(m));
    for (int k = 0; MET[k] != NULL; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, MET[k]);
        FUZZ_CHECK(cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= INT32_MAX &&
                   v->valuedouble == (double)(long long)v->valuedouble);
    }
    FUZZ_CHECK(cJSON_GetObjectItemCaseSensitive(m, "commits")->valuedouble >= ncommit);
    FUZZ_CHECK(cJSON_GetObjectItemCaseSensitive(m, "tool_calls")->valuedouble >= ntool);
    FUZZ_CHECK(cJSON_GetObjectItemCaseSensitive(m, "errors")->valuedouble >= nerr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const NAMES[4] = {"2031-02-03-session-9-fuzz.md",
        "2031-02-03-session-9-fuzz.json", "fuzz-log.md", "fuzz-log.json"};
    const char *name, *log;
    char *sid;
    uint8_t *buf;
    cJSON *ep = NULL, *again = NULL;
    cairn__err e;
    int rc, rc2;

    if (size < 1 || size > (1u << 20))
        return 0;
    name = NAMES[data[0] & 3];
    if ((buf = fuzz_dup(data + 1, size - 1)) == NULL)
        return 0;
    log = (const char *)buf;
    e.msg[0] = 0;
    rc = cairn__extract_episode(name, strlen(name), log, size - 1, &ep, &e);
    FUZZ_CHECK(rc == CAIRN_OK || rc == CAIRN_EINVAL || rc == CAIRN_ENOMEM);
    if (rc != CAIRN_OK) {
        FUZZ_CHECK(ep == NULL && e.msg[0] != 0);
        free(buf);
        return 0;
    }
    sid = strdup(name);
    if (sid != NULL) {
        *strrchr(sid, '.') = 0;
        check_episode(ep, sid);
        free(sid);
    }
    rc2 = cairn__extract_episode(name, strlen(name), log, size - 1, &again, NULL);
    if (rc2 == CAIRN_OK) {
        char *a = cJSON_PrintUnformatted(ep), *b = cJSON_PrintUnformatted(again);
        if (a != NULL && b != NULL)
            FUZZ_CHECK(strcmp(a, b) == 0);
        free(a);
        free(b);
    }
    cJSON_Delete(again);
    cJSON_Delete(ep);
    free(buf);
    return 0;
}
