/*
 * tokenize.h - text to index terms, the same at index and at query time.
 *
 * The rules (format-spec/tokenizer.md, version 2) decide which bytes of an
 * index file mean which word, so a change to them is a format change.
 * In short: UTF-8 in (invalid bytes separate words); words are runs of
 * letters, digits and combining marks (an apostrophe separates words:
 * `don't` is `don` + `t`; rules 1 kept apostrophes after a Latin letter
 * inside a word); each Han, Hiragana or Katakana character is a word of
 * its own;
 * words are NFKC-normalized and case-folded, accents are removed from Latin
 * letters, and terms are cut to TOK_MAX_BYTES; then a Snowball stemmer
 * (English by default, any libstemmer algorithm, or none). Stop words are
 * kept: BM25's idf weighs them down.
 *
 * A tokenizer holds a stemmer's state: one per thread.
 */
#ifndef CAIRN_TOKENIZE_H
#define CAIRN_TOKENIZE_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"

#define TOK_MAX_BYTES 64  /* a longer term is cut at a code point boundary */
#define TOK_VERSION 2     /* of the rules above; an index file's version says
                             which rules made its terms (memindex.c) */

typedef struct cairn__tokenizer cairn__tokenizer;

/* Called once per term, in text order: pos counts terms from 0. term is
 * valid UTF-8, 1..TOK_MAX_BYTES bytes, not NUL-terminated, valid only
 * during the call. A non-zero return stops the run and is returned. */
typedef int (*cairn__tok_fn)(void *user, const char *term, size_t len, uint32_t pos);

/* New tokenizer. stemmer: NULL or "english" (default), "none", or any
 * algorithm name libstemmer lists ("porter", "french", ...).
 * Errors: CAIRN_EINVAL (unknown stemmer), CAIRN_ENOMEM. */
int cairn__tok_new(cairn__tokenizer **out, const cairn_allocator *a, const char *stemmer);

/* The same with the rules of version `rules`: TOK_VERSION, or 1 for a
 * reader that must give the terms version 1 gave (the built-in embedder
 * cairn-hash-v1 is defined by them). Errors as above; CAIRN_EINVAL for
 * another version. */
int cairn__tok_new_rules(cairn__tokenizer **out, const cairn_allocator *a, const char *stemmer,
                         int rules);

/* Accepts NULL. */
void cairn__tok_free(cairn__tokenizer *t);

/* Entries in the stem cache now (0 before the first stem; it grows with a
 * large vocabulary: tokenize.c). For tests and stats. */
size_t cairn__tok_stem_cache(const cairn__tokenizer *t);

/* The stemmer's name as given to cairn__tok_new ("english" for NULL). */
const char *cairn__tok_stemmer(const cairn__tokenizer *t);

/* Tokenize len bytes of text (any bytes; NUL is a separator). Returns
 * CAIRN_OK, or the first non-zero value fn returned. */
int cairn__tok_run(cairn__tokenizer *t, const uint8_t *text, size_t len, cairn__tok_fn fn,
                   void *user);

/* The same run, but each word is passed before it is stemmed (folded,
 * normalized and cut as above): for a caller that remembers the term of
 * each word it has seen and stems only the new ones. */
int cairn__tok_run_words(cairn__tokenizer *t, const uint8_t *text, size_t len, cairn__tok_fn fn,
                         void *user);

/* The term cairn__tok_run passes for a word cairn__tok_run_words passed:
 * *term points to word itself, or into t (valid until t's next call).
 * Returns 0 when the stemmer failed (no memory): *term is then the word
 * unstemmed, as cairn__tok_run would pass it, but only for this once. */
int cairn__tok_stem(cairn__tokenizer *t, const char *word, size_t len, const char **term,
                    size_t *term_len);

#endif /* CAIRN_TOKENIZE_H */
