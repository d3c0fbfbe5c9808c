/*
 * fuzz_utf8.c - the rule for text (engine/common/utf8.c) over arbitrary
 * bytes: byte 0 picks an item word (none, "memory") for the JSON check,
 * the rest is the document, also given to the field check.
 *
 * Invariants: no crash, no read outside the input; the field check fails
 * exactly when cairn__utf8_bad finds a byte, and at that byte; the JSON
 * check fails whenever the bytes break the rule, and only when they do or
 * the text holds "\u0000" at all; on a document cJSON parses whole, it
 * fails exactly when the bytes break the rule or a string holds the escape
 * \u0000 (a reference scan: in valid JSON a backslash is always inside a
 * string and escapes the one character after it); every message is one
 * line of valid UTF-8 that fits its buffer.
 */
#include "fuzz.h"

#include <cjson/cJSON.h>

#include "utf8.h"

/* Whether a string of valid JSON holds the escape \u0000. */
static int has_nul_escape(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\')
            continue;
        if (i + 5 < len && s[i + 1] == 'u' && memcmp(s + i + 2, "0000", 4) == 0)
            return 1;
        i++; /* the escaped character */
    }
    return 0;
}

static void check_msg(const cairn__err *e)
{
    size_t n = strnlen(e->msg, sizeof e->msg);
    FUZZ_CHECK(n > 0 && n < sizeof e->msg);
    FUZZ_CHECK(cairn__utf8_bad(e->msg, n, NULL) == n);
    FUZZ_CHECK(memchr(e->msg, '\n', n) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *doc;
    size_t len, bad;
    int nul, rc;
    cairn__err e;
    cJSON *root;
    const char *end = NULL;

    if (size < 1 || size > (1u << 20))
        return 0;
    doc = (const char *)data + 1;
    len = size - 1;
    bad = cairn__utf8_bad(doc, len, &nul);
    FUZZ_CHECK(bad <= len);
    FUZZ_CHECK(!nul || (bad < len && doc[bad] == 0));

    e.msg[0] = 0;
    rc = cairn__utf8_check(&e, "field", doc, len);
    FUZZ_CHECK((rc == CAIRN_OK) == (bad == len));
    if (rc != CAIRN_OK) {
        char want[48];
        snprintf(want, sizeof want, "at byte %zu", bad);
        check_msg(&e);
        FUZZ_CHECK(strstr(e.msg, want) != NULL);
    }

    e.msg[0] = 0;
    rc = cairn__utf8_check_json(&e, NULL, data[0] & 1 ? "memory" : NULL, doc, len);
    FUZZ_CHECK(rc == CAIRN_OK || rc == CAIRN_EINVAL);
    if (bad < len)
        FUZZ_CHECK(rc == CAIRN_EINVAL);
    if (rc != CAIRN_OK) {
        check_msg(&e);
        FUZZ_CHECK(bad < len || has_nul_escape(doc, len));
    }
    root = cJSON_ParseWithLengthOpts(doc, len, &end, 0);
    if (root != NULL) {
        size_t off = (size_t)(end - doc);
        while (off < len && (doc[off] == ' ' || doc[off] == '\t' || doc[off] == '\r' ||
                             doc[off] == '\n'))
            off++;
        if (off == len) /* the whole input is one JSON value */
            FUZZ_CHECK((rc == CAIRN_OK) == (bad == len && !has_nul_escape(doc, len)));
        cJSON_Delete(root);
    }
    return 0;
}
