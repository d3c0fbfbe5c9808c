/*
 * extract_text.c - the text side of the episode extractor: the bounded
 * text buffer (xtext), word matching and the word lists that
 * classify work items and status phrases, and ISO 8601 timestamps.
 *
 * Word matching is ASCII case-insensitive on word boundaries ('_' and
 * non-ASCII bytes are word characters, so "test_pr_ready" is no "test");
 * a list word ending in '*' matches any ending ("fail*" is failed, fails,
 * failure). Matching is linear in the text times the list length, and the
 * texts matched are xtexts (at most EXTRACT_STR_MAX bytes) or single lines.
 */
#include <stdio.h>
#include <string.h>

#include "civil.h"
#include "extract_int.h"
#include "utf8.h"

/* ---- text ------------------------------------------------------------ */

void cairn__xt_init(xtext *t)
{
    t->n = 0;
    t->s[0] = 0;
    t->full = 0;
    t->space = 0;
}

/* Append one code point of k bytes (or U+FFFD), with a pending space. */
static void xt_cp(xtext *t, const char *c, size_t k)
{
    size_t need = k + (t->space && t->n > 0);
    if (t->full)
        return;
    if (need > EXTRACT_STR_MAX - t->n) {
        t->full = 1;
        return;
    }
    if (t->space && t->n > 0)
        t->s[t->n++] = ' ';
    t->space = 0;
    memcpy(t->s + t->n, c, k);
    t->n += k;
    t->s[t->n] = 0;
}

void cairn__xt_put(xtext *t, const char *p, size_t len)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0, k;
    while (i < len && !t->full) {
        if (s[i] <= 0x20 || s[i] == 0x7F) {
            t->space = 1;
            i++;
            continue;
        }
        if ((k = cairn__utf8_seq(s + i, len - i)) == 0) {
            xt_cp(t, "\xEF\xBF\xBD", 3);
            i++;
            continue;
        }
        xt_cp(t, p + i, k);
        i += k;
    }
}

void cairn__xt_puts(xtext *t, const char *s)
{
    cairn__xt_put(t, s, strlen(s));
}

void cairn__xt_md(xtext *t, const char *p, size_t len)
{
    size_t i = 0;
    /* leading check marks: "✅ done" reads as "done" */
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    while (len - i >= 3 && (memcmp(p + i, "\xE2\x9C\x85", 3) == 0 ||
                            memcmp(p + i, "\xE2\x9C\x94", 3) == 0)) {
        i += 3;
        if (len - i >= 3 && memcmp(p + i, "\xEF\xB8\x8F", 3) == 0)
            i += 3;
        while (i < len && p[i] == ' ')
            i++;
    }
    while (i < len && !t->full) {
        size_t j = i;
        if (p[i] == '`' || (p[i] == '*' && i + 1 < len && p[i + 1] == '*')) {
            i += p[i] == '`' ? 1 : 2;
            continue;
        }
        if (p[i] == '[' || (p[i] == '!' && i + 1 < len && p[i + 1] == '[')) {
            /* [text](url): keep text, drop the url; look no further than 512 bytes */
            size_t a = i + (p[i] == '!' ? 2 : 1), c = a, lim = len - a > 512 ? a + 512 : len;
            while (c < lim && p[c] != ']' && p[c] != '\n')
                c++;
            if (c + 1 < lim && p[c] == ']' && p[c + 1] == '(') {
                size_t u = c + 2;
                while (u < lim && p[u] != ')' && p[u] != ' ')
                    u++;
                if (u < lim && p[u] == ')') {
                    cairn__xt_md(t, p + a, c - a);
                    i = u + 1;
                    continue;
                }
            }
        }
        while (j < len && p[j] != '`' && p[j] != '*' && p[j] != '[' && p[j] != '!')
            j++;
        if (j == i)
            j++;
        cairn__xt_put(t, p + i, j - i);
        i = j;
    }
}

/* ---- words ------------------------------------------------------------- */

static int wchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c >= 0x80;
}

static unsigned char lc(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* Offset of w (see cairn__x_word) in p[from..len), or -1. */
static long find_word(const char *p, size_t len, const char *w, size_t from)
{
    size_t wl = strlen(w), i;
    int pre = wl > 0 && w[wl - 1] == '*';
    const unsigned char *s = (const unsigned char *)p;
    if (pre)
        wl--;
    if (wl == 0 || len < wl)
        return -1;
    for (i = from; i + wl <= len; i++) {
        size_t k = 0;
        if (lc(s[i]) != (unsigned char)w[0] || (i > 0 && wchar(s[i - 1]) && wchar((unsigned char)w[0])))
            continue;
        while (k < wl && lc(s[i + k]) == (unsigned char)w[k])
            k++;
        if (k < wl)
            continue;
        if (!pre && i + wl < len && wchar(s[i + wl]) && wchar((unsigned char)w[wl - 1]))
            continue;
        return (long)i;
    }
    return -1;
}

int cairn__x_word(const char *p, size_t len, const char *w)
{
    return find_word(p, len, w, 0) >= 0;
}

int cairn__x_any(const char *p, size_t len, const char *const *ws)
{
    for (; *ws != NULL; ws++)
        if (find_word(p, len, *ws, 0) >= 0)
            return 1;
    return 0;
}

static const char *const NEGATORS[] = {"0", "no", "zero", "without", "not", "never", "non", NULL};

/* Earliest offset of any word of ws that is not negated ("0 failed",
 * "no errors"), or -1. */
static long first_hit(const char *p, size_t len, const char *const *ws, int negatable)
{
    long best = -1;
    for (; *ws != NULL; ws++) {
        long at = -1;
        size_t from = 0;
        while ((at = find_word(p, len, *ws, from)) >= 0) {
            size_t e = (size_t)at, b;
            if (!negatable)
                break;
            while (e > 0 && (p[e - 1] == ' ' || p[e - 1] == '-'))
                e--;
            b = e;
            while (b > 0 && wchar((unsigned char)p[b - 1]))
                b--;
            if (!cairn__x_any(p + b, e - b, NEGATORS) || e - b == 0)
                break;
            from = (size_t)at + 1;
        }
        if (at >= 0 && (best < 0 || at < best))
            best = at;
    }
    return best;
}

static const char *const ERR_W[] = {"error", "errors", "errored", "fail", "fails", "failed",
    "failing", "failure", "failures", "broke", "broken", "crash*", "exception*", "regression*",
    "rejected", "denied", "bug", "bugs", "violation*", "conflict*", "timed out", NULL};
static const char *const FIX_W[] = {"fix", "fixed", "fixes", "fixing", "resolv*", "repair*",
    "recover*", "restor*", "revert*", "corrected", "correction*", "workaround*", "worked around",
    "retried", "retry", "unblock*", "addressed", "mitigat*", "rolled back", "rollback", NULL};
static const char *const TEST_W[] = {"test", "tests", "tested", "testing", "pytest", "pester",
    "unittest*", "ctest", "cmocka", NULL};
static const char *const HANDOFF_W[] = {"hand off", "handed off", "handing off", "handoff to",
    "handed over", "delegated", "delegate to", "routed to", "route to", "dispatched",
    "escalated", "reassigned", NULL};
static const char *const FINE_W[] = {"passed", "passes", "passing", "clean", "green",
    "succeeded", "successful", "successfully", NULL};
static const char *const FAIL_S[] = {"fail*", "abandon*", "blocked", "error*", "abort*",
    "cancel*", "broken", "\xE2\x9D\x8C", NULL};
static const char *const PART_S[] = {"partial*", "in_progress", "in progress", "incomplete",
    "wip", "pending", "awaiting", "ongoing", "executing", "not complete", "not done",
    "not yet", "unfinished", "halted", "paused", "deferred", "\xE2\x8F\xB3", NULL};
static const char *const OK_S[] = {"complete", "completed", "success*", "succeeded", "done",
    "final", "closed", "merged", "pass", "passed", "passing", "resolved", "delivered", "fixed",
    "finished", "shipped", "ok", "\xE2\x9C\x85", NULL};
static const char *const NA_W[] = {"n/a", "na", "skipped", "skip", "not applicable",
    "not required", "not needed", "no changes", "no tasks", NULL};
static const char *const LESSON_W[] = {"lesson*", "learning*", "learned", "retrospective*",
    "takeaway*", NULL};

int cairn__x_status(const char *p, size_t len)
{
    long f = first_hit(p, len, FAIL_S, 1), q = first_hit(p, len, PART_S, 0),
         s = first_hit(p, len, OK_S, 0);
    int r = X_NONE;
    long best = -1;
    if (f >= 0)
        best = f, r = X_FAILURE;
    if (q >= 0 && (best < 0 || q < best))
        best = q, r = X_PARTIAL;
    if (s >= 0 && (best < 0 || s < best))
        r = X_SUCCESS;
    return r;
}

int cairn__x_fixish(const char *p, size_t len)
{
    return cairn__x_any(p, len, FIX_W);
}

int cairn__x_na(const char *p, size_t len)
{
    return cairn__x_any(p, len, NA_W);
}

int cairn__x_lessonish(const char *p, size_t len)
{
    return cairn__x_any(p, len, LESSON_W);
}

const char *cairn__x_dtype(const xtext *chosen, const xtext *rationale, const xtext *context)
{
    static const char *const REC[] = {"recover*", "revert*", "rollback", "roll back", "restor*",
        "retry", "retried", "salvage*", "workaround*", "hotfix", "incident*", NULL};
    static const char *const ROUTE[] = {"route", "routes", "routed", "routing", "delegat*",
        "dispatch*", "hand off", "handoff to", "assign*", NULL};
    static const char *const TEST[] = {"test*", "qa", "verif*", "validat*", "pytest", NULL};
    static const char *const DESIGN[] = {"design*", "architect*", "adr", "adr-*", "schema*",
        "approach", "structure", "canonical", "protocol", "standard*", "format", "convention*",
        "interface", "api", NULL};
    const xtext *t[3] = {chosen, rationale, context};
    for (int i = 0; i < 3; i++) /* a decision taken in an incident is a recovery */
        if (t[i] != NULL && cairn__x_any(t[i]->s, t[i]->n, REC))
            return "recovery";
    for (int i = 0; i < 2; i++) {
        if (t[i] == NULL || t[i]->n == 0)
            continue;
        if (cairn__x_any(t[i]->s, t[i]->n, ROUTE))
            return "routing";
        if (cairn__x_any(t[i]->s, t[i]->n, TEST))
            return "test";
        if (cairn__x_any(t[i]->s, t[i]->n, DESIGN))
            return "design";
    }
    return "implementation";
}

int cairn__x_because(const xtext *t, size_t *cut, size_t *rest)
{
    long at = find_word(t->s, t->n, "because", 0);
    if (at <= 0 || t->s[at - 1] != ' ')
        return 0;
    *cut = (size_t)at - 1;
    *rest = (size_t)at + 7;
    while (*rest < t->n && t->s[*rest] == ' ')
        (*rest)++;
    return *rest < t->n;
}

int cairn__x_decides(const xtext *t)
{
    static const char *const V[] = {"decided", "decision", "decide", "chose", "chosen", "choose",
        "selected", "opted", "picked", "went with", "elected", "settled on", NULL};
    for (size_t i = 0; V[i] != NULL; i++)
        if (find_word(t->s, t->n > 24 ? 24 : t->n, V[i], 0) == 0)
            return 1;
    return 0;
}

const char *cairn__x_classify(const xtext *t, int *err, int *fixed)
{
    int e = first_hit(t->s, t->n, ERR_W, 1) >= 0, fix = cairn__x_any(t->s, t->n, FIX_W),
        test = cairn__x_any(t->s, t->n, TEST_W);
    *err = *fixed = 0;
    if (e && fix) { /* a failure met and mended */
        *err = *fixed = 1;
        return test ? "test" : "milestone";
    }
    if (e && !test && !cairn__x_any(t->s, t->n, FINE_W)) { /* "lint passed (errors elsewhere)" is no error */
        *err = 1;
        return "error";
    }
    if (test) /* "3 tests failing" is a test result, not a session error */
        return "test";
    return cairn__x_any(t->s, t->n, HANDOFF_W) ? "handoff" : "milestone";
}

/* ---- timestamps -------------------------------------------------------- */

static int digits(const char *p, size_t len, size_t at, size_t n, int *v)
{
    *v = 0;
    if (at + n > len)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (p[at + i] < '0' || p[at + i] > '9')
            return 0;
        *v = *v * 10 + (p[at + i] - '0');
    }
    return 1;
}

int cairn__x_ts(const char *p, size_t len, char out[21], int *timed, long long *epoch)
{
    static const unsigned char mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    size_t i = 0;
    int y, mo, d, h = 0, mi = 0, s = 0, oh = 0, om = 0, sign = 0;
    long long days, t;
    unsigned um, ud;

    *timed = 0;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (!digits(p, len, i, 4, &y) || i + 4 >= len || p[i + 4] != '-' ||
        !digits(p, len, i + 5, 2, &mo) || i + 7 >= len || p[i + 7] != '-' ||
        !digits(p, len, i + 8, 2, &d))
        return 0;
    i += 10;
    if (i < len && p[i] >= '0' && p[i] <= '9')
        return 0;
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
        (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))))
        return 0;
    if (i < len && (p[i] == 'T' || p[i] == ' ') && digits(p, len, i + 1, 2, &h) &&
        i + 3 < len && p[i + 3] == ':' && digits(p, len, i + 4, 2, &mi)) {
        if (h > 23 || mi > 59)
            return 0;
        *timed = 1;
        i += 6;
        if (i + 2 < len && p[i] == ':' && digits(p, len, i + 1, 2, &s)) {
            if (s > 60)
                return 0;
            s = s == 60 ? 59 : s;
            i += 3;
            if (i < len && (p[i] == '.' || p[i] == ','))
                for (i++; i < len && p[i] >= '0' && p[i] <= '9'; i++)
                    ;
        }
        while (i < len && p[i] == ' ')
            i++;
        if (i < len && (p[i] == '+' || p[i] == '-') && digits(p, len, i + 1, 2, &oh)) {
            sign = p[i] == '-' ? -1 : 1;
            i += 3;
            if (i < len && p[i] == ':')
                i++;
            if (!digits(p, len, i, 2, &om))
                om = 0;
            if (oh > 23 || om > 59)
                return 0;
        }
    }
    days = cairn__days_from_civil(y, (unsigned)mo, (unsigned)d);
    t = days * 86400 + h * 3600 + mi * 60 + s - sign * (oh * 3600 + om * 60);
    days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
    {
        int64_t yy;
        long long rem = t - days * 86400;
        cairn__civil_from_days(days, &yy, &um, &ud);
        if (yy < 1 || yy > 9999)
            return 0;
        unsigned f[6] = {(unsigned)yy, um, ud, (unsigned)(rem / 3600), (unsigned)(rem / 60 % 60),
                         (unsigned)(rem % 60)};
        memcpy(out, "0000-00-00T00:00:00Z", 21);
        for (int k = 0, at = 3; k < 6; k++, at += 3) {
            for (int w = at; f[k] > 0; w--, f[k] /= 10)
                out[w] = (char)('0' + f[k] % 10);
        }
    }
    *epoch = t;
    return 1;
}
