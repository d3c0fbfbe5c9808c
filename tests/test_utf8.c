/*
 * test_utf8.c - the rule for text (engine/common/utf8.c): which bytes are
 * valid UTF-8 without NUL, the field check's messages, and the JSON check:
 * a \u0000 escape or a bad byte anywhere in a document, named by the
 * member path (and the item of a top-level array), while an escaped
 * backslash before "u0000" and every other escape pass; deep and long
 * paths are cut, never overrun; the public cairn_text_check agrees.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn.h"
#include "utf8.h"

/* The JSON check fails on json (len bytes) with a message holding want. */
static void json_fails(const char *prefix, const char *item, const char *json, size_t len,
                       const char *want)
{
    cairn__err e = {{0}};
    assert_int_equal(cairn__utf8_check_json(&e, prefix, item, json, len), CAIRN_EINVAL);
    if (strstr(e.msg, want) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", e.msg, want);
    /* the message itself follows the rule: it may quote member names */
    assert_int_equal(cairn__utf8_bad(e.msg, strlen(e.msg), NULL), strlen(e.msg));
}

static void json_passes(const char *json)
{
    cairn__err e = {{0}};
    if (cairn__utf8_check_json(&e, NULL, NULL, json, strlen(json)) != CAIRN_OK)
        fail_msg("%s: %s", json, e.msg);
}

static void valid_utf8_without_nul_passes_and_the_rest_is_found(void **state)
{
    static const struct {
        const char *s;
        size_t len, bad;
        int nul;
    } cases[] = {
        {"", 0, 0, 0},
        {"plain ascii", 11, 11, 0},
        {"caf\xc3\xa9 \xe8\xa8\x98 \xf0\x9f\x98\x80", 14, 14, 0},
        {"\xf4\x8f\xbf\xbf", 4, 4, 0},       /* U+10FFFF, the last code point */
        {"ab\0cd", 5, 2, 1},                 /* a NUL byte */
        {"ab\xff", 3, 2, 0},                 /* never a UTF-8 byte */
        {"x\x80", 2, 1, 0},                  /* a lone continuation byte */
        {"\xc0\xaf", 2, 0, 0},               /* overlong '/' */
        {"\xe0\x80\xaf", 3, 0, 0},           /* overlong, 3 bytes */
        {"\xed\xa0\x80", 3, 0, 0},           /* a UTF-16 surrogate */
        {"\xf4\x90\x80\x80", 4, 0, 0},       /* past U+10FFFF */
        {"ok\xe8\xa8", 4, 2, 0},             /* cut short at the end */
        {"ok\xe8\x41\x41", 5, 2, 0},         /* a lead byte without its continuation */
        {"0123456789abcdef\0x", 18, 16, 1}, /* found past the eight-byte steps */
        {"0123456789abcdefgh\xff", 19, 18, 0},
        {"01234567\xc3\xa9" "01234567\x01", 19, 19, 0},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int nul = -1;
        size_t bad = cairn__utf8_bad(cases[i].s, cases[i].len, &nul);
        if (bad != cases[i].bad || nul != cases[i].nul)
            fail_msg("case %zu: bad %zu nul %d, want %zu %d", i, bad, nul, cases[i].bad,
                     cases[i].nul);
    }
}

static void the_field_check_names_the_field_and_the_byte(void **state)
{
    cairn__err e = {{0}};
    (void)state;
    assert_int_equal(cairn__utf8_check(&e, "content", "ok", 2), CAIRN_OK);
    assert_int_equal(cairn__utf8_check(&e, "content", NULL, 5), CAIRN_OK);
    assert_int_equal(cairn__utf8_check(&e, "content", "abc\0tail", 8), CAIRN_EINVAL);
    assert_string_equal(e.msg, "content: holds a NUL byte at byte 3");
    assert_int_equal(cairn__utf8_check_str(&e, "label", "bad \xff"), CAIRN_EINVAL);
    assert_string_equal(e.msg, "label: is not valid UTF-8 at byte 4");
    assert_int_equal(cairn__utf8_check_str(&e, "label", NULL), CAIRN_OK);
}

static void a_nul_escape_is_named_by_its_member_path(void **state)
{
    static const char imp[] = "[{\"content\":\"ok\"},{\"content\":\"abc\\u0000hidden tail\"}]";
    static const char ep[] = "{\"session\":\"s\",\"decisions\":[{\"chosen\":\"a\"},"
                             "{\"chosen\":\"x\\u0000y\"}]}";
    static const char meta[] = "[{\"content\":\"ok\",\"metadata\":{\"k\":[1,{\"deep\":\"\\u0000\"}]}}]";
    (void)state;
    json_fails(NULL, "memory", imp, strlen(imp), "memory 2: content: holds a NUL (\\u0000)");
    json_fails(NULL, NULL, imp, strlen(imp), "[1].content: holds a NUL (\\u0000)");
    json_fails(NULL, NULL, ep, strlen(ep), "decisions[1].chosen: holds a NUL (\\u0000)");
    json_fails("LLM answer: ", "item", meta, strlen(meta),
               "LLM answer: item 1: metadata.k[1].deep: holds a NUL");
    /* in a member name: the object holding it is named */
    json_fails(NULL, "memory", "[{\"metadata\":{\"a\\u0000\":1}}]", 28,
               "memory 1: metadata: a member name holds a NUL");
    /* a top-level string, and bytes after the document */
    json_fails(NULL, NULL, "\"a\\u0000\"", 9, "JSON text: holds a NUL (\\u0000)");
    json_fails(NULL, NULL, "[1] \"\\u0000\"", 12, "holds a NUL");
}

static void bad_bytes_anywhere_in_a_document_are_found(void **state)
{
    static const char raw_nul[] = "{\"task\":\"ab\0cd\"}";
    (void)state;
    json_fails(NULL, NULL, raw_nul, sizeof raw_nul - 1, "task: holds a NUL byte");
    json_fails(NULL, "memory", "[{\"content\":\"bad \xff\"}]", 21,
               "memory 1: content: is not valid UTF-8");
    json_fails(NULL, NULL, "{\"nodes\":[{\"label\":\"x\"},{\"label\":\"\xed\xa0\x80\"}]}", 41,
               "nodes[1].label: is not valid UTF-8");
    json_fails(NULL, NULL, "[1, 2]\0", 7, "JSON text: holds a NUL byte");
    json_fails(NULL, NULL, "[1, 2] \xc3", 8, "is not valid UTF-8");
}

static void other_escapes_and_text_pass(void **state)
{
    (void)state;
    json_passes("[{\"content\":\"a\\\\u0000b\"}]");    /* a backslash, then "u0000" */
    json_passes("[\"\\\\\\\\u0000\", \"\\\"u0000\"]"); /* two backslashes; a quote */
    json_passes("{\"x\":\"\\u0001\\u00e9\\ud83d\\ude00 \\n\\t\\\"\\/\"}");
    json_passes("{\"caf\xc3\xa9\":[\"\xe8\xa8\x98\xe6\x86\xb6\", 1.5e3, true, null]}");
    json_passes("");
}

static void deep_and_long_paths_are_cut_not_overrun(void **state)
{
    char deep[4096], longkey[512];
    size_t n = 0;
    (void)state;
    /* 200 nested arrays: deeper than the frames kept */
    for (int i = 0; i < 200; i++)
        deep[n++] = '[';
    memcpy(deep + n, "\"\\u0000\"", 8);
    n += 8;
    for (int i = 0; i < 200; i++)
        deep[n++] = ']';
    json_fails(NULL, NULL, deep, n, "...: holds a NUL (\\u0000)");
    /* a member name of 300 bytes of 2-byte characters: cut on a character */
    n = 0;
    longkey[n++] = '{';
    longkey[n++] = '"';
    for (int i = 0; i < 150; i++) {
        longkey[n++] = '\xc3';
        longkey[n++] = '\xa9';
    }
    memcpy(longkey + n, "\":\"\\u0000\"}", 11);
    n += 11;
    json_fails(NULL, NULL, longkey, n, "...: holds a NUL (\\u0000)");
    /* a control byte in a member name (cJSON takes one raw) keeps the message one line */
    json_fails(NULL, NULL, "{\"a\nb\":\"\\u0000\"}", 16, "a?b: holds a NUL (\\u0000)");
    /* an unterminated string and a lone backslash at the end stay in bounds */
    json_passes("[\"abc");
    json_passes("[\"abc\\");
    json_passes("[\"\\u000");
}

static void the_public_check_is_the_same_rule(void **state)
{
    char err[CAIRN_ERRMSG_MAX];
    (void)state;
    assert_int_equal(cairn_text_check("caf\xc3\xa9", 5, 0, err, sizeof err), CAIRN_OK);
    assert_string_equal(err, "");
    assert_int_equal(cairn_text_check("a\0b", 3, 0, err, sizeof err), CAIRN_EINVAL);
    assert_string_equal(err, "text: holds a NUL byte at byte 1");
    assert_int_equal(cairn_text_check("{\"a\":\"\\u0000\"}", 14, 1, err, sizeof err), CAIRN_EINVAL);
    assert_string_equal(err, "a: holds a NUL (\\u0000)");
    /* the same text as plain text: a backslash and "u0000" are fine */
    assert_int_equal(cairn_text_check("{\"a\":\"\\u0000\"}", 14, 0, err, sizeof err), CAIRN_OK);
    assert_int_equal(cairn_text_check(NULL, 0, 1, NULL, 0), CAIRN_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(valid_utf8_without_nul_passes_and_the_rest_is_found),
        cmocka_unit_test(the_field_check_names_the_field_and_the_byte),
        cmocka_unit_test(a_nul_escape_is_named_by_its_member_path),
        cmocka_unit_test(bad_bytes_anywhere_in_a_document_are_found),
        cmocka_unit_test(other_escapes_and_text_pass),
        cmocka_unit_test(deep_and_long_paths_are_cut_not_overrun),
        cmocka_unit_test(the_public_check_is_the_same_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
