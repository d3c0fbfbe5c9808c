/*
 * utf8.h - the one rule for text the engine takes in (README "Text"):
 * valid UTF-8 (RFC 3629: no overlong form, no UTF-16 surrogate, nothing
 * past U+10FFFF) without a NUL byte. Every entry point that stores text
 * (memory store, update, import, remember; episodes, causal nodes, edges
 * and patterns, the causal-graph import; the session-log extractor) checks
 * it here, so the same input is refused the same way everywhere, and what
 * is stored can be written back as JSON that any parser reads.
 *
 * A JSON document follows the rule too, and no string in it may hold the
 * escape \u0000: cJSON decodes it to a NUL byte, which silently ends the
 * string for every C caller after it ("abc\u0000tail" would be stored as
 * "abc").
 */
#ifndef CAIRN_UTF8_H
#define CAIRN_UTF8_H

#include <stddef.h>

#include "status.h"

/* Length of the valid UTF-8 sequence at s (n >= 1 bytes available), 0 if
 * none. A NUL byte is a sequence of 1 here (the rule refuses it apart). */
size_t cairn__utf8_seq(const unsigned char *s, size_t n);

/* Offset of the first byte of p[0..len) that is NUL or starts invalid
 * UTF-8, or len if there is none; *nul (may be NULL) = 1 when it is NUL. */
size_t cairn__utf8_bad(const char *p, size_t len, int *nul);

/* Check one text field: CAIRN_OK, or CAIRN_EINVAL with "<what>: holds a NUL
 * byte at byte N" or "<what>: is not valid UTF-8 at byte N" in e (may be
 * NULL). p NULL passes (absent is not the rule's business). */
int cairn__utf8_check(cairn__err *e, const char *what, const char *p, size_t len);
/* The same for a C string (which cannot hold a NUL: UTF-8 only). */
int cairn__utf8_check_str(cairn__err *e, const char *what, const char *s);

/* Check a JSON document json[0..len), parsed already or not: CAIRN_OK, or
 * CAIRN_EINVAL naming where, in e (may be NULL):
 *   "<prefix><item> <N>: <path>: holds a NUL (\u0000)"
 * prefix (may be NULL) comes first as given ("LLM answer: "); with item not
 * NULL and a top-level array, "<item> <N>: " names its element (1-based);
 * path is the member path below it, as "decisions[2].chosen" (0-based
 * indexes), or "a member name" of one. The problem is one of "holds a NUL
 * (\u0000)", "holds a NUL byte", "is not valid UTF-8". Any bytes are safe
 * to give (a document that is no JSON gives some path). */
int cairn__utf8_check_json(cairn__err *e, const char *prefix, const char *item, const char *json,
                           size_t len);

#endif /* CAIRN_UTF8_H */
