/*
 * test_tokenize.c - the tokenizer (engine/text/tokenize.c), rule by rule of
 * format-spec/tokenizer.md: splitting, folding, accents, compatibility
 * forms, scripts without spaces, apostrophes, invalid UTF-8, the length
 * cut, stemming and its choices, and stopping early.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include <libstemmer.h>

#include "tokenize.h"

/* The terms of a run joined by '|', with their positions checked. */
typedef struct collect {
    char out[1024];
    size_t len;
    uint32_t next_pos;
    int stop_after; /* > 0: return 99 after that many terms */
} collect;

static int on_term(void *user, const char *term, size_t len, uint32_t pos)
{
    collect *c = user;
    assert_int_equal(pos, c->next_pos);
    assert_true(len >= 1 && len <= TOK_MAX_BYTES);
    assert_true(c->len + len + 1 < sizeof c->out);
    if (c->len > 0)
        c->out[c->len++] = '|';
    memcpy(c->out + c->len, term, len);
    c->len += len;
    c->out[c->len] = 0;
    c->next_pos++;
    if (c->stop_after > 0 && (int)c->next_pos == c->stop_after)
        return 99;
    return 0;
}

static const char *toks_rules(const char *stemmer, int rules, const char *text)
{
    static collect c;
    cairn__tokenizer *t = NULL;
    memset(&c, 0, sizeof c);
    assert_int_equal(cairn__tok_new_rules(&t, NULL, stemmer, rules), CAIRN_OK);
    assert_int_equal(cairn__tok_run(t, (const uint8_t *)text, strlen(text), on_term, &c),
                     CAIRN_OK);
    cairn__tok_free(t);
    return c.out;
}

static const char *toks(const char *stemmer, const char *text)
{
    return toks_rules(stemmer, TOK_VERSION, text);
}

static void splits_on_everything_but_letters_and_digits(void **state)
{
    (void)state;
    assert_string_equal(toks("none", "Hello, World! multi-agent v1.2 snake_case x"),
                        "hello|world|multi|agent|v1|2|snake|case|x");
    assert_string_equal(toks("none", ""), "");
    assert_string_equal(toks("none", "  ...  "), "");
}

static void keeps_stop_words(void **state)
{
    (void)state;
    assert_string_equal(toks("none", "the cat and the hat"), "the|cat|and|the|hat");
}

static void folds_case_and_compatibility_forms(void **state)
{
    (void)state;
    /* full-width letters, the fi ligature, sharp s, Greek final sigma */
    assert_string_equal(toks("none", "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3 \xef\xac\x81le"),
                        "abc|file");
    assert_string_equal(toks("none", "Stra\xc3\x9f" "e"), "strasse");
    assert_string_equal(toks("none", "\xce\xa3\xce\x9f\xce\xa6\xce\x9f\xce\xa3 "
                                     "\xcf\x83\xce\xbf\xcf\x86\xce\xbf\xcf\x82"),
                        "\xcf\x83\xce\xbf\xcf\x86\xce\xbf\xcf\x83|\xcf\x83\xce\xbf\xcf\x86\xce\xbf\xcf\x83");
}

static void removes_accents_from_latin_letters_only(void **state)
{
    (void)state;
    /* café (precomposed) and cafe + combining acute give the same term */
    assert_string_equal(toks("none", "Caf\xc3\xa9 cafe\xcc\x81 r\xc3\xa9sum\xc3\xa9"),
                        "cafe|cafe|resume");
    /* Devanagari vowel signs are marks of a non-Latin word: kept */
    assert_string_equal(toks("none", "\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\x82\xe0\xa4\xa6\xe0\xa5\x80"),
                        "\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\x82\xe0\xa4\xa6\xe0\xa5\x80");
    /* Hangul stays composed (NFC after folding) */
    assert_string_equal(toks("none", "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4"),
                        "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4");
}

static void scripts_without_spaces_give_one_term_per_character(void **state)
{
    (void)state;
    /* 記憶 + hiragana no + ab */
    assert_string_equal(toks("none", "\xe8\xa8\x98\xe6\x86\xb6\xe3\x81\xae" "ab"),
                        "\xe8\xa8\x98|\xe6\x86\xb6|\xe3\x81\xae|ab");
}

static void apostrophes_separate_words(void **state)
{
    (void)state;
    assert_string_equal(toks("none", "don't don\xe2\x80\x99t 'quoted' dogs' ' Maria's"),
                        "don|t|don|t|quoted|dogs|maria|s");
}

/* Rules 1 (what cairn-hash-v1 is made of) joined letters across one. */
static void rules_1_join_letters_across_an_apostrophe(void **state)
{
    (void)state;
    assert_string_equal(toks_rules("none", 1, "don't don\xe2\x80\x99t 'quoted' dogs' '"),
                        "don't|don't|quoted|dogs");
    assert_string_equal(toks_rules("english", 1, "the agent's decisions"), "the|agent|decis");
}

static void unknown_rules_are_refused(void **state)
{
    cairn__tokenizer *t = (cairn__tokenizer *)&t;
    (void)state;
    assert_int_equal(cairn__tok_new_rules(&t, NULL, NULL, 0), CAIRN_EINVAL);
    assert_null(t);
    assert_int_equal(cairn__tok_new_rules(&t, NULL, NULL, TOK_VERSION + 1), CAIRN_EINVAL);
}

static void invalid_utf8_and_nul_separate_words(void **state)
{
    collect c;
    cairn__tokenizer *t = NULL;
    static const uint8_t bad[] = {'a', 'b', 0xff, 'c', 0xc3, 'd', 0, 'e', 0xe2, 0x82};
    (void)state;
    memset(&c, 0, sizeof c);
    assert_int_equal(cairn__tok_new(&t, NULL, "none"), CAIRN_OK);
    assert_int_equal(cairn__tok_run(t, bad, sizeof bad, on_term, &c), CAIRN_OK);
    assert_string_equal(c.out, "ab|c|d|e");
    cairn__tok_free(t);
}

static void long_words_are_cut_at_a_character_boundary(void **state)
{
    char in[300], want[TOK_MAX_BYTES + 3];
    const char *got;
    (void)state;
    memset(in, 'a', 200);
    strcpy(in + 200, " b");
    memset(want, 'a', TOK_MAX_BYTES);
    strcpy(want + TOK_MAX_BYTES, "|b");
    assert_string_equal(toks("none", in), want);
    /* 2-byte letters: 64 bytes hold 32 of them, never half of one */
    in[0] = 0;
    for (int i = 0; i < 40; i++)
        strcat(in, "\xc3\xb0"); /* eth, Latin, no decomposition */
    got = toks("none", in);
    assert_int_equal(strlen(got), TOK_MAX_BYTES);
    assert_memory_equal(got, in, TOK_MAX_BYTES);
}

static void stems_english_by_default(void **state)
{
    (void)state;
    assert_string_equal(toks(NULL, "Running connections quickly"), "run|connect|quick");
    assert_string_equal(toks("english", "the agent's decisions"), "the|agent|s|decis");
    assert_string_equal(toks("none", "Running connections"), "running|connections");
    assert_string_equal(toks("porter", "generalizations"), "gener");
}

/* The stem cache answers as the stemmer would, before and after it grows:
 * 400,000 words of a 30,000-word vocabulary (too many for the first
 * cache), each checked against Snowball itself. */
static int one_term(void *user, const char *term, size_t len, uint32_t pos)
{
    char *out = user;
    (void)pos;
    memcpy(out, term, len);
    out[len] = 0;
    return 0;
}

static void the_stem_cache_is_transparent_as_it_grows(void **state)
{
    static const char *const ends[] = {"", "ing", "ions", "ly", "ed", "ness", "s", "ational"};
    struct sb_stemmer *sb = sb_stemmer_new("english", "UTF_8");
    cairn__tokenizer *t = NULL;
    uint64_t rng = 12345;
    (void)state;
    assert_non_null(sb);
    assert_int_equal(cairn__tok_new(&t, NULL, "english"), CAIRN_OK);
    assert_int_equal(cairn__tok_stem_cache(t), 0);
    for (int i = 0; i < 400000; i++) {
        char w[32], got[TOK_MAX_BYTES + 1], want[64];
        unsigned v, n = 0;
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        v = (unsigned)(rng >> 33) % 30000;
        for (unsigned x = v + 1; x > 0; x /= 13) /* letters only, so no other split */
            w[n++] = "bcdfghklmnprt"[x % 13], w[n++] = "aeiou"[x % 5];
        strcpy(w + n, ends[v % 8]);
        got[0] = 0;
        assert_int_equal(cairn__tok_run(t, (const uint8_t *)w, strlen(w), one_term, got), CAIRN_OK);
        const sb_symbol *st = sb_stemmer_stem(sb, (const sb_symbol *)w, (int)strlen(w));
        int sl = sb_stemmer_length(sb);
        memcpy(want, st, (size_t)sl);
        want[sl] = 0;
        if (strcmp(got, want) != 0)
            fail_msg("word %d %s: cache gave %s, Snowball %s", i, w, got, want);
    }
    assert_true(cairn__tok_stem_cache(t) > 4096); /* it grew, and stayed right */
    cairn__tok_free(t);
    sb_stemmer_delete(sb);
}

/* cairn__tok_run_words then cairn__tok_stem on each word give what
 * cairn__tok_run gives (the index remembers each word's term this way). */
static cairn__tokenizer *stem_tok;
static int stem_each(void *user, const char *w, size_t len, uint32_t pos)
{
    const char *term;
    size_t tlen;
    cairn__tok_stem(stem_tok, w, len, &term, &tlen);
    return on_term(user, term, tlen, pos);
}

static void words_then_stems_are_the_run(void **state)
{
    static const char *const texts[] = {
        "Running runs ran; the runner's connections CONNECTED generously.",
        "Caf\xc3\xa9 na\xc3\xafve don't rock\xe2\x80\x99n\xe2\x80\x99roll Stra\xc3\x9f" "e \xef\xac\x81le",
        "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e v1.2.3 2024 e\xcc\x81t\xc3\xa9 \xc4\xb0stanbul",
        "antidisestablishmentarianisms internationalizations "
        "pneumonoultramicroscopicsilicovolcanoconiosispneumonoultramicroscopicsilicovolcanoes",
        "studies studying flies happily agreed relational conditional feeds", "", "   ,,, ",
    };
    static const char *const stemmers[] = {"english", "none", "french"};
    (void)state;
    for (size_t s = 0; s < sizeof stemmers / sizeof stemmers[0]; s++)
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
            collect c;
            char want[1024];
            strcpy(want, toks(stemmers[s], texts[i]));
            memset(&c, 0, sizeof c);
            assert_int_equal(cairn__tok_new(&stem_tok, NULL, stemmers[s]), CAIRN_OK);
            for (int twice = 0; twice < 2; twice++) { /* the second time from the stem cache */
                memset(&c, 0, sizeof c);
                assert_int_equal(cairn__tok_run_words(stem_tok, (const uint8_t *)texts[i],
                                                      strlen(texts[i]), stem_each, &c),
                                 CAIRN_OK);
                assert_string_equal(c.out, want);
            }
            cairn__tok_free(stem_tok);
        }
    /* and the words are not stemmed yet */
    {
        collect c;
        memset(&c, 0, sizeof c);
        assert_int_equal(cairn__tok_new(&stem_tok, NULL, "english"), CAIRN_OK);
        assert_int_equal(cairn__tok_run_words(stem_tok, (const uint8_t *)"Running flies", 13,
                                              on_term, &c),
                         CAIRN_OK);
        assert_string_equal(c.out, "running|flies");
        cairn__tok_free(stem_tok);
    }
}

static void refuses_an_unknown_stemmer(void **state)
{
    cairn__tokenizer *t = (cairn__tokenizer *)&t;
    (void)state;
    assert_int_equal(cairn__tok_new(&t, NULL, "klingon"), CAIRN_EINVAL);
    assert_null(t);
    assert_int_equal(cairn__tok_new(&t, NULL, "french"), CAIRN_OK);
    assert_string_equal(cairn__tok_stemmer(t), "french");
    cairn__tok_free(t);
    cairn__tok_free(NULL);
}

static void a_callback_can_stop_the_run(void **state)
{
    collect c;
    cairn__tokenizer *t = NULL;
    const char *text = "one two three four";
    (void)state;
    memset(&c, 0, sizeof c);
    c.stop_after = 2;
    assert_int_equal(cairn__tok_new(&t, NULL, "none"), CAIRN_OK);
    assert_int_equal(cairn__tok_run(t, (const uint8_t *)text, strlen(text), on_term, &c), 99);
    assert_string_equal(c.out, "one|two");
    cairn__tok_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(splits_on_everything_but_letters_and_digits),
        cmocka_unit_test(keeps_stop_words),
        cmocka_unit_test(folds_case_and_compatibility_forms),
        cmocka_unit_test(removes_accents_from_latin_letters_only),
        cmocka_unit_test(scripts_without_spaces_give_one_term_per_character),
        cmocka_unit_test(apostrophes_separate_words),
        cmocka_unit_test(rules_1_join_letters_across_an_apostrophe),
        cmocka_unit_test(unknown_rules_are_refused),
        cmocka_unit_test(invalid_utf8_and_nul_separate_words),
        cmocka_unit_test(long_words_are_cut_at_a_character_boundary),
        cmocka_unit_test(stems_english_by_default),
        cmocka_unit_test(the_stem_cache_is_transparent_as_it_grows),
        cmocka_unit_test(words_then_stems_are_the_run),
        cmocka_unit_test(refuses_an_unknown_stemmer),
        cmocka_unit_test(a_callback_can_stop_the_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
