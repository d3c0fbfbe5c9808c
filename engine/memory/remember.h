/*
 * remember.h - the parts of cairn_mem_remember (remember.c) that read
 * untrusted text: the conversation given, and the LLM's answer. Exposed
 * for tests and fuzzing.
 */
#ifndef CAIRN_REMEMBER_H
#define CAIRN_REMEMBER_H

#include <stddef.h>

#include "status.h"

/* A candidate memory from the LLM's answer (strings malloc'd). */
typedef struct rem_cand {
    char *content;
    char *category;
    double importance;
} rem_cand;

/* Parse an LLM answer: a JSON array of objects {"content": non-empty
 * string up to 1 MiB, "category": optional string of 1..64 bytes (default
 * "fact"), "importance": optional number 0..1 (default 0.5)}, possibly
 * inside a ``` fence (with or without a language tag) and surrounded by
 * whitespace. At most 1000 candidates. All of it follows the rule for text
 * (utf8.h): valid UTF-8, no NUL, no \u0000 in a string. Errors:
 * CAIRN_EINVAL (e names what is wrong and where), CAIRN_ENOMEM. On error
 * nothing needs freeing. */
int cairn__remember_parse(const char *answer, size_t len, rem_cand **out, size_t *n, cairn__err *e);
void cairn__remember_free_cands(rem_cand *c, size_t n);

/* The prompt for a conversation (messages: a JSON array of {"role",
 * "content"}, text by the same rule). Errors: CAIRN_EINVAL (e says why),
 * CAIRN_ENOMEM. */
int cairn__remember_prompt(const char *messages, size_t len, char **prompt, cairn__err *e);

#endif /* CAIRN_REMEMBER_H */
