/*
 * fuzz_remember.c - the readers of remember's untrusted text
 * (engine/memory/remember.c): the LLM's answer (cairn__remember_parse) and
 * the conversation given (cairn__remember_prompt), over arbitrary bytes.
 * Byte 0 picks which; the rest is the text.
 *
 * Invariants: no crash or leak; a parsed answer has 1..1000 candidates
 * (or none for []), each with non-empty content, a category of 1..64 bytes
 * and an importance in 0..1, both text by the rule (valid UTF-8; a \u0000
 * never cuts one short: the answer is refused); a failure says why; a
 * prompt quotes every message's content.
 */
#include "fuzz.h"

#include "remember.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cairn__err e;
    if (size < 1 || size > (1u << 20))
        return 0;
    if (data[0] & 1) {
        rem_cand *c = NULL;
        size_t n = 0;
        e.msg[0] = 0;
        if (cairn__remember_parse((const char *)data + 1, size - 1, &c, &n, &e) != CAIRN_OK) {
            FUZZ_CHECK(c == NULL && n == 0 && e.msg[0] != 0);
            return 0;
        }
        FUZZ_CHECK(n <= 1000);
        for (size_t i = 0; i < n; i++) {
            FUZZ_CHECK(c[i].content != NULL && c[i].content[0] != 0);
            FUZZ_CHECK(c[i].category != NULL && strlen(c[i].category) >= 1 &&
                       strlen(c[i].category) <= 64);
            FUZZ_CHECK(c[i].importance >= 0 && c[i].importance <= 1);
            FUZZ_CHECK(cairn__utf8_bad(c[i].content, strlen(c[i].content), NULL) ==
                       strlen(c[i].content));
            FUZZ_CHECK(cairn__utf8_bad(c[i].category, strlen(c[i].category), NULL) ==
                       strlen(c[i].category));
        }
        cairn__remember_free_cands(c, n);
    } else {
        char *p = NULL;
        if (cairn__remember_prompt((const char *)data + 1, size - 1, &p, &e) == CAIRN_OK) {
            FUZZ_CHECK(p != NULL && strstr(p, "Conversation:\n") != NULL);
            free(p);
        }
    }
    return 0;
}
