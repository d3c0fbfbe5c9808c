/*
 * hashembed.h - the built-in embedder: offline, deterministic, no model.
 *
 * A text becomes a vector of `dim` floats by feature hashing (the "hashing
 * trick"): each Snowball stem of the text adds 1 to one signed coordinate,
 * and each character trigram of each case-folded word, padded as "<word>",
 * adds 1/sqrt(trigrams in the word) to another; the result is scaled to
 * unit length. What it captures, beyond BM25's exact terms: misspellings
 * and changed word forms still share most trigrams ("recieve"/"receive",
 * "deploy"/"deployment"), so such texts land close together. What it cannot
 * do: synonyms and paraphrases with no letters in common ("car"/"vehicle"),
 * word order, negation, or any meaning; for those plug in a real model
 * (cairn_mem embed callback, or the tool's --embed-cmd).
 *
 * The hash, the seeds, the weights and the words it hashes (tokenizer
 * rules 1, cairn__tok_new_rules, whatever rules the text index uses) are
 * part of its identity (HASHEMBED_ID): vectors made by another version are
 * not comparable.
 */
#ifndef CAIRN_HASHEMBED_H
#define CAIRN_HASHEMBED_H

#include <stddef.h>

#include "cairn.h"

#define HASHEMBED_ID "cairn-hash-v1"
#define HASHEMBED_DIM_DEFAULT 384
/* Below this cosine two texts share no more than chance collisions and a
 * stray trigram or two (unrelated sentences score 0.0..0.1). */
#define HASHEMBED_MIN_SIMILARITY 0.15

typedef struct cairn__hashembed cairn__hashembed;

/* dim: 1..65536. Errors: CAIRN_EINVAL, CAIRN_ENOMEM. */
int cairn__hashembed_new(cairn__hashembed **out, const cairn_allocator *a, size_t dim);
void cairn__hashembed_free(cairn__hashembed *e); /* accepts NULL */
size_t cairn__hashembed_dim(const cairn__hashembed *e);

/* Embed len bytes of text (any bytes) into out[0..dim). A text without a
 * word gives the zero vector. One embedder per thread (it holds two
 * tokenizers). Errors: CAIRN_ENOMEM. */
int cairn__hashembed_run(cairn__hashembed *e, const char *text, size_t len, float *out);

#endif /* CAIRN_HASHEMBED_H */
