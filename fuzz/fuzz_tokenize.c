/*
 * fuzz_tokenize.c - cairn__tok_run() over arbitrary bytes, with the default
 * English stemmer and with none, under the current rules (the index's) and
 * rules 1 (what the built-in embedder cairn-hash-v1 tokenizes by). Input:
 * any bytes (text of a memory or a query).
 *
 * Invariants: every term is 1..TOK_MAX_BYTES bytes of valid UTF-8;
 * positions count up from 0 with no gap; without stemming no term holds an
 * ASCII upper-case letter, a separator byte or NUL, nor (current rules) an
 * apostrophe; no term of the current rules holds one at all; two runs over the same
 * bytes give the same terms (checked through a running XXH3 of them);
 * the words of cairn__tok_run_words, each through cairn__tok_stem, are
 * those terms too (the index adds documents that way).
 */
#include "fuzz.h"

#include <utf8proc.h>

#include "tokenize.h"

typedef struct state {
    uint32_t next_pos;
    uint64_t hash;
    int stemmed;
    int rules; /* 1: an apostrophe may join letters */
    cairn__tokenizer *stem_with; /* words: stem each before checking it */
} state;

static int on_term(void *user, const char *term, size_t len, uint32_t pos)
{
    state *s = user;
    size_t i = 0;

    if (s->stem_with != NULL)
        cairn__tok_stem(s->stem_with, term, len, &term, &len);
    FUZZ_CHECK(pos == s->next_pos);
    FUZZ_CHECK(len >= 1 && len <= TOK_MAX_BYTES);
    while (i < len) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)term + i,
                                              (utf8proc_ssize_t)(len - i), &c);
        FUZZ_CHECK(k > 0);
        FUZZ_CHECK(c != 0);
        FUZZ_CHECK(c != 0x2019); /* stored as ' under rules 1, a separator under 2 */
        if (s->rules != 1)
            FUZZ_CHECK(c != '\'');
        if (!s->stemmed && c < 0x80)
            FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       (c == '\'' && s->rules == 1));
        i += (size_t)k;
    }
    s->hash = XXH3_64bits_withSeed(term, len, s->hash ^ pos);
    s->next_pos++;
    return 0;
}

static uint64_t run(cairn__tokenizer *t, const uint8_t *data, size_t size, int stemmed, int rules)
{
    state s = {0, 0, stemmed, rules, NULL};
    FUZZ_CHECK(cairn__tok_run(t, data, size, on_term, &s) == CAIRN_OK);
    return s.hash ^ s.next_pos;
}

static uint64_t run_words(cairn__tokenizer *t, const uint8_t *data, size_t size, int stemmed,
                          int rules)
{
    state s = {0, 0, stemmed, rules, t};
    FUZZ_CHECK(cairn__tok_run_words(t, data, size, on_term, &s) == CAIRN_OK);
    return s.hash ^ s.next_pos;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cairn__tokenizer *tok[2][2]; /* [rules 1, current][english, none] */

    if (tok[0][0] == NULL) {
        for (int r = 0; r < 2; r++) {
            FUZZ_CHECK(cairn__tok_new_rules(&tok[r][0], NULL, NULL, r ? TOK_VERSION : 1) == CAIRN_OK);
            FUZZ_CHECK(cairn__tok_new_rules(&tok[r][1], NULL, "none", r ? TOK_VERSION : 1) == CAIRN_OK);
        }
    }
    for (int r = 0; r < 2; r++) {
        int rules = r ? TOK_VERSION : 1;
        for (int st = 0; st < 2; st++) {
            uint64_t h = run(tok[r][st], data, size, !st, rules);
            FUZZ_CHECK(h == run(tok[r][st], data, size, !st, rules));
            FUZZ_CHECK(run_words(tok[r][st], data, size, !st, rules) == h);
        }
    }
    return 0;
}
