/*
 * utf8.c - the rule for text (utf8.h): valid UTF-8 without NUL, checked for
 * a text field, a C string, or a whole JSON document.
 *
 * The JSON check is one pass over the bytes with a small stack of the
 * containers it is in (the innermost PATH_DEPTH named, the rest counted),
 * so a message can name the member that breaks the rule, as the other
 * validation messages do ("decisions[2].chosen: ..."). It does not parse:
 * it runs on text cJSON has accepted, or is about to be given, and on any
 * other bytes it stays in bounds and reports some path. Every byte outside
 * and inside strings is checked; inside a string, an escape is skipped
 * whole except \u0000, which is the one escape that decodes to a NUL.
 */
#include "utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cairn.h"

size_t cairn__utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    if (c < 0xC2)
        return 0; /* a continuation byte, or an overlong 2-byte lead */
    if (c < 0xE0)
        return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c < 0xF0) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
            return 0;
        if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))
            return 0; /* overlong, or a UTF-16 surrogate */
        return 3;
    }
    if (c < 0xF5) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        if ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))
            return 0; /* overlong, or past U+10FFFF */
        return 4;
    }
    return 0;
}

size_t cairn__utf8_bad(const char *p, size_t len, int *nul)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0, k;
    if (nul != NULL)
        *nul = 0;
    while (i < len) {
        /* the common case, eight bytes a step: ASCII without NUL (no high
         * bit, no zero byte: "Bit Twiddling Hacks", haszero) */
        const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
        uint64_t v;
        while (i + 8 <= len) {
            memcpy(&v, s + i, 8);
            if ((((v - ones) & ~v) | v) & highs)
                break;
            i += 8;
        }
        if (i >= len)
            break;
        if (s[i] < 0x80) {
            if (s[i] == 0) {
                if (nul != NULL)
                    *nul = 1;
                return i;
            }
            i++;
            continue;
        }
        if ((k = cairn__utf8_seq(s + i, len - i)) == 0)
            return i;
        i += k;
    }
    return len;
}

int cairn__utf8_check(cairn__err *e, const char *what, const char *p, size_t len)
{
    int nul;
    size_t bad;
    if (p == NULL)
        return CAIRN_OK;
    bad = cairn__utf8_bad(p, len, &nul);
    if (bad == len)
        return CAIRN_OK;
    return cairn__fail(e, CAIRN_EINVAL, "%s: %s at byte %zu", what,
                       nul ? "holds a NUL byte" : "is not valid UTF-8", bad);
}

int cairn__utf8_check_str(cairn__err *e, const char *what, const char *s)
{
    return s == NULL ? CAIRN_OK : cairn__utf8_check(e, what, s, strlen(s));
}

/* ---- JSON ------------------------------------------------------------------ */

#define PATH_DEPTH 16 /* containers a message names; deeper ones show as "..." */
#define KEY_SHOWN 40  /* bytes of a member name a message shows */

typedef struct frame {
    int arr;           /* 1: an array, 0: an object */
    unsigned long idx; /* array: the current element */
    const char *key;   /* object: the current member's name (raw, in the text); NULL: none yet */
    size_t klen;
} frame;

/* A message's path: pieces are appended whole or not at all, so a member
 * name is never cut inside a character. */
typedef struct pbuf {
    char s[128];
    size_t n;
    int full;
} pbuf;

static void put(pbuf *b, const char *p, size_t n)
{
    if (b->full || n == 0)
        return;
    if (b->n + n + 4 > sizeof b->s) {
        if (b->n < 3 || memcmp(b->s + b->n - 3, "...", 3) != 0) {
            memcpy(b->s + b->n, "...", 4);
            b->n += 3;
        }
        b->full = 1;
        return;
    }
    memcpy(b->s + b->n, p, n);
    b->n += n;
    b->s[b->n] = 0;
}

/* The path of the frames [from, depth) (the last one's member name left out
 * when the bad byte is in a name). */
static void render(pbuf *b, const frame *f, size_t from, size_t depth, int in_key)
{
    size_t shown = depth < PATH_DEPTH ? depth : PATH_DEPTH;
    for (size_t k = from; k < shown; k++) {
        char piece[KEY_SHOWN + 8];
        size_t n = 0;
        if (f[k].arr) {
            n = (size_t)snprintf(piece, sizeof piece, "[%lu]", f[k].idx);
        } else if (f[k].key != NULL && !(in_key && k + 1 == depth)) {
            size_t kn = f[k].klen;
            if (kn > KEY_SHOWN) { /* cut on a character boundary: the name is valid UTF-8 */
                kn = KEY_SHOWN;
                while (kn > 0 && ((unsigned char)f[k].key[kn] & 0xC0) == 0x80)
                    kn--;
            }
            if (b->n > 0)
                piece[n++] = '.';
            for (size_t j = 0; j < kn; j++) /* a message is one line: no control bytes */
                piece[n++] = (unsigned char)f[k].key[j] < 0x20 ? '?' : f[k].key[j];
            if (kn < f[k].klen) {
                memcpy(piece + n, "...", 3);
                n += 3;
            }
        }
        put(b, piece, n);
    }
    if (depth > PATH_DEPTH)
        put(b, "...", 3);
}

int cairn__utf8_check_json(cairn__err *e, const char *prefix, const char *item, const char *json,
                           size_t len)
{
    const unsigned char *s = (const unsigned char *)json;
    frame f[PATH_DEPTH];
    size_t depth = 0, i = 0, k, from = 0;
    int want_key = 0, in_key = 0;
    const char *why = NULL;
    char head[48] = "";
    pbuf b;

    if (json == NULL)
        return CAIRN_OK;
    while (i < len && why == NULL) {
        unsigned c = s[i];
        if (c == '"') {
            size_t j = i + 1;
            in_key = depth > 0 && depth <= PATH_DEPTH && !f[depth - 1].arr && want_key;
            while (j < len && s[j] != '"') {
                if (s[j] == '\\') {
                    if (j + 5 < len && s[j + 1] == 'u' && memcmp(s + j + 2, "0000", 4) == 0) {
                        why = "holds a NUL (\\u0000)";
                        break;
                    }
                    /* skip the escaped character if it is plain ASCII; anything
                     * else is left for the checks below */
                    j += j + 1 < len && s[j + 1] > 0 && s[j + 1] < 0x80 ? 2 : 1;
                } else if (s[j] == 0) {
                    why = "holds a NUL byte";
                    break;
                } else if ((k = cairn__utf8_seq(s + j, len - j)) == 0) {
                    why = "is not valid UTF-8";
                    break;
                } else {
                    j += k;
                }
            }
            if (why != NULL)
                break;
            if (in_key) {
                f[depth - 1].key = json + i + 1;
                f[depth - 1].klen = j - i - 1;
            }
            in_key = 0;
            i = j + 1;
            continue;
        }
        if (c == '{' || c == '[') {
            if (depth < PATH_DEPTH) {
                f[depth].arr = c == '[';
                f[depth].idx = 0;
                f[depth].key = NULL;
                f[depth].klen = 0;
            }
            depth++;
            want_key = c == '{';
        } else if (c == '}' || c == ']') {
            if (depth > 0)
                depth--;
            want_key = 0;
        } else if (c == ',') {
            want_key = depth > 0 && depth <= PATH_DEPTH && !f[depth - 1].arr;
            if (depth > 0 && depth <= PATH_DEPTH && f[depth - 1].arr)
                f[depth - 1].idx++;
        } else if (c == ':') {
            want_key = 0;
        } else if (c == 0) {
            why = "holds a NUL byte";
            break;
        } else if (c >= 0x80) {
            if ((k = cairn__utf8_seq(s + i, len - i)) == 0) {
                why = "is not valid UTF-8";
                break;
            }
            i += k;
            continue;
        }
        i++;
    }
    if (why == NULL)
        return CAIRN_OK;
    b.n = 0;
    b.s[0] = 0;
    b.full = 0;
    if (item != NULL && depth > 0 && f[0].arr) {
        snprintf(head, sizeof head, "%s %lu: ", item, f[0].idx + 1);
        from = 1;
    }
    render(&b, f, from, depth, in_key);
    if (prefix == NULL)
        prefix = "";
    if (!prefix[0] && !head[0] && b.n == 0 && !in_key)
        prefix = "JSON text: ";
    return cairn__fail(e, CAIRN_EINVAL, "%s%s%s%s%s%s", prefix, head, b.s, b.n > 0 ? ": " : "",
                       in_key ? "a member name " : "", why);
}

int cairn_text_check(const char *text, size_t len, int json, char *err, size_t errlen)
{
    cairn__err e;
    int rc;
    e.msg[0] = 0;
    if (text == NULL && len > 0)
        rc = cairn__fail(&e, CAIRN_EINVAL, "text: NULL");
    else if (json)
        rc = cairn__utf8_check_json(&e, NULL, NULL, text, len);
    else
        rc = cairn__utf8_check(&e, "text", text, len);
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", rc == CAIRN_OK ? "" : e.msg);
    return rc;
}
