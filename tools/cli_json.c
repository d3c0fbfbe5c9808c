/*
 * cli_json.c - JSON checking and writing for the `cairn` tool.
 *
 * The engine stores payload bytes without parsing them. `cairn log` only
 * stores text that cJSON parses fully AND that the strict checker here
 * accepts, so what it stores is JSON for any parser. `cairn dump` re-checks
 * every payload with the strict checker (the C API may have stored
 * anything) and embeds it verbatim when it passes: numbers keep their exact
 * digits because nothing is converted through a double.
 *
 * The checker is iterative with a fixed stack of CLI_JSON_DEPTH_MAX
 * container bytes, so deep input cannot exhaust the C stack.
 */
#include "cli_json.h"

#include <string.h>

#include <cjson/cJSON.h>

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int is_hex(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

size_t cli_utf8_seq(const unsigned char *p, size_t n)
{
    unsigned c = p[0];

    if (c < 0x80)
        return 1;
    if (c < 0xC2)
        return 0; /* continuation byte or overlong 2-byte lead */
    if (c < 0xE0)
        return n >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c < 0xF0) {
        if (n < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
            return 0;
        if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0))
            return 0; /* overlong, or a UTF-16 surrogate */
        return 3;
    }
    if (c < 0xF5) {
        if (n < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            return 0;
        if ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90))
            return 0; /* overlong, or past U+10FFFF */
        return 4;
    }
    return 0;
}

/* A string starting at the quote s[*pos]; *pos ends after the closing
 * quote, or at the bad byte. */
static int scan_string(const unsigned char *s, size_t n, size_t *pos)
{
    size_t i = *pos + 1, l;

    while (i < n) {
        unsigned char c = s[i];
        if (c == '"') {
            *pos = i + 1;
            return 0;
        }
        if (c < 0x20)
            break;
        if (c == '\\') {
            if (i + 1 >= n) {
                i++;
                break;
            }
            c = s[i + 1];
            if (c == 'u') {
                size_t k;
                for (k = 2; k < 6 && i + k < n && is_hex(s[i + k]); k++)
                    ;
                if (k < 6) {
                    i += k;
                    break;
                }
                i += 6;
            } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
                       c == 'r' || c == 't') {
                i += 2;
            } else {
                i++;
                break;
            }
            continue;
        }
        if (c < 0x80) {
            i++;
            continue;
        }
        l = cli_utf8_seq(s + i, n - i);
        if (l == 0)
            break;
        i += l;
    }
    *pos = i;
    return -1;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at s[*pos]. */
static int scan_number(const unsigned char *s, size_t n, size_t *pos)
{
    size_t i = *pos;

    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0') {
        i++;
    } else if (i < n && s[i] >= '1' && s[i] <= '9') {
        while (i < n && is_digit(s[i]))
            i++;
    } else {
        goto bad;
    }
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || !is_digit(s[i]))
            goto bad;
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= n || !is_digit(s[i]))
            goto bad;
        while (i < n && is_digit(s[i]))
            i++;
    }
    *pos = i;
    return 0;
bad:
    *pos = i;
    return -1;
}

int cli_json_check(const char *text, size_t n, size_t *err_off)
{
    /* What the checker expects next. */
    enum { ST_VALUE, ST_VALUE_OR_CLOSE, ST_KEY, ST_KEY_OR_CLOSE, ST_COLON, ST_AFTER } st = ST_VALUE;
    const unsigned char *s = (const unsigned char *)text;
    unsigned char stack[CLI_JSON_DEPTH_MAX]; /* '{' or '[' per open container */
    size_t depth = 0, i = 0;

    for (;;) {
        unsigned char c;
        while (i < n && is_ws(s[i]))
            i++;
        if (i == n) {
            if (st == ST_AFTER && depth == 0)
                return 0;
            goto bad;
        }
        c = s[i];
        switch (st) {
        case ST_KEY_OR_CLOSE:
            if (c == '}') {
                depth--;
                i++;
                st = ST_AFTER;
                continue;
            }
            /* fallthrough */
        case ST_KEY:
            if (c != '"' || scan_string(s, n, &i) != 0)
                goto bad;
            st = ST_COLON;
            continue;
        case ST_COLON:
            if (c != ':')
                goto bad;
            i++;
            st = ST_VALUE;
            continue;
        case ST_AFTER:
            if (depth == 0)
                goto bad; /* trailing garbage */
            if (c == ',') {
                i++;
                st = stack[depth - 1] == '{' ? ST_KEY : ST_VALUE;
                continue;
            }
            if (c != (stack[depth - 1] == '{' ? '}' : ']'))
                goto bad;
            depth--;
            i++;
            continue;
        case ST_VALUE_OR_CLOSE:
            if (c == ']') {
                depth--;
                i++;
                st = ST_AFTER;
                continue;
            }
            /* fallthrough */
        case ST_VALUE:
            if (c == '{' || c == '[') {
                if (depth == CLI_JSON_DEPTH_MAX)
                    goto bad;
                stack[depth++] = c;
                i++;
                st = c == '{' ? ST_KEY_OR_CLOSE : ST_VALUE_OR_CLOSE;
                continue;
            }
            if (c == '"') {
                if (scan_string(s, n, &i) != 0)
                    goto bad;
            } else if (c == '-' || is_digit(c)) {
                if (scan_number(s, n, &i) != 0)
                    goto bad;
            } else if (n - i >= 4 && memcmp(s + i, "true", 4) == 0) {
                i += 4;
            } else if (n - i >= 5 && memcmp(s + i, "false", 5) == 0) {
                i += 5;
            } else if (n - i >= 4 && memcmp(s + i, "null", 4) == 0) {
                i += 4;
            } else {
                goto bad;
            }
            st = ST_AFTER;
            continue;
        }
    }
bad:
    *err_off = i;
    return -1;
}

int cli_json_validate(const char *s, size_t n, size_t *err_off)
{
    const char *end = NULL;
    cJSON *doc;

    if (n == 0) {
        *err_off = 0;
        return -1;
    }
    doc = cJSON_ParseWithLengthOpts(s, n, &end, 0);
    if (doc == NULL) {
        /* The strict checker names the first bad byte more precisely (cJSON
         * points at the last byte when the text ends too early). */
        if (cli_json_check(s, n, err_off) != 0)
            return -1;
        *err_off = end && end >= s && end <= s + n ? (size_t)(end - s) : 0;
        return -1;
    }
    cJSON_Delete(doc);
    /* cJSON stops after the value; only whitespace may follow it. */
    if (end == NULL || end < s || end > s + n)
        end = s;
    while (end < s + n && is_ws((unsigned char)*end))
        end++;
    if (end != s + n) {
        *err_off = (size_t)(end - s);
        return -1;
    }
    return cli_json_check(s, n, err_off);
}

void cli_json_put_compact(FILE *f, const char *s, size_t n)
{
    size_t i, run;
    int in_str = 0, esc = 0;

    while (n > 0 && is_ws((unsigned char)s[0])) {
        s++;
        n--;
    }
    while (n > 0 && is_ws((unsigned char)s[n - 1]))
        n--;
    if (memchr(s, '\n', n) == NULL && memchr(s, '\r', n) == NULL) {
        fwrite(s, 1, n, f);
        return;
    }
    for (i = 0, run = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (in_str) {
            if (esc)
                esc = 0;
            else if (c == '\\')
                esc = 1;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (is_ws(c)) {
            fwrite(s + run, 1, i - run, f);
            run = i + 1;
        }
    }
    fwrite(s + run, 1, n - run, f);
}

void cli_json_put_string(FILE *f, const char *str, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, run = 0;

    fputc('"', f);
    while (i < n) {
        unsigned char c = s[i];
        size_t l = c >= 0x80 ? cli_utf8_seq(s + i, n - i) : 1;
        char esc[8];
        size_t elen = 0;

        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            elen = 2;
        } else if (c < 0x20) {
            esc[0] = '\\';
            elen = 2;
            switch (c) {
            case '\n': esc[1] = 'n'; break;
            case '\r': esc[1] = 'r'; break;
            case '\t': esc[1] = 't'; break;
            case '\b': esc[1] = 'b'; break;
            case '\f': esc[1] = 'f'; break;
            default:
                memcpy(esc + 1, "u00", 3);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                elen = 6;
            }
        } else if (l == 0) {
            memcpy(esc, "\\ufffd", 6);
            elen = 6;
            l = 1;
        }
        if (elen == 0) {
            i += l;
            continue;
        }
        fwrite(s + run, 1, i - run, f);
        fwrite(esc, 1, elen, f);
        i += l;
        run = i;
    }
    fwrite(s + run, 1, n - run, f);
    fputc('"', f);
}

void cli_base64_put(FILE *f, const void *data, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = data;
    char out[4096];
    size_t o = 0;

    while (n > 0) {
        unsigned v = (unsigned)p[0] << 16;
        size_t take = n < 3 ? n : 3;
        if (take > 1)
            v |= (unsigned)p[1] << 8;
        if (take > 2)
            v |= p[2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = take > 1 ? tab[(v >> 6) & 63] : '=';
        out[o++] = take > 2 ? tab[v & 63] : '=';
        p += take;
        n -= take;
        if (o == sizeof out) {
            fwrite(out, 1, o, f);
            o = 0;
        }
    }
    fwrite(out, 1, o, f);
}

void cli_json_add_int(cJSON *o, const char *name, int64_t v)
{
    char d[24];
    snprintf(d, sizeof d, "%lld", (long long)v);
    cJSON_AddRawToObject(o, name, d);
}
