/*
 * cycles.h - the memory stream's fast paths (cycles.c): reading the fields
 * of a stream entry's metadata without a JSON parser, writing an entry as
 * JSON without building a tree, and the cycle index of a handle: per
 * stream namespace, its entries' (cycle, seq) in cycle order, kept up to
 * date from what the handle folds since it last looked.
 *
 * The metadata cairn_stream_add writes has one layout (format-spec/
 * tiers.md); one of another layout (changed by cairn_mem_update, written
 * by hand) is read by the JSON parser instead: these functions say so and
 * the caller falls back.
 */
#ifndef CAIRN_TIER_CYCLES_H
#define CAIRN_TIER_CYCLES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tiers.h"

/* The fields of a stream entry's metadata, pointing into it. */
typedef struct stream_meta {
    const char *eid, *role, *issues, *rest;
    size_t eid_len, role_len, issues_len, rest_len;
    int64_t cycle, importance;
} stream_meta;

/* Read meta (NUL-terminated) of the layout cairn_stream_add writes: 0, or
 * -1 when it is not of it (read it with cJSON). The light read takes the
 * entry id, the cycle and the rest (what an entry's JSON needs; role and
 * issues NULL); the whole read also role, importance and issues (what the
 * filters need). Members are in the order cairn_stream_add writes them. */
int cairn__stream_meta_light(const char *meta, stream_meta *out);
int cairn__stream_meta(const char *meta, stream_meta *out);

/* Does the array text issues[0..len) ("[84,7]") hold the number n? */
int cairn__stream_has_issue(const char *issues, size_t len, int64_t n);

/* A growable output buffer. */
typedef struct tbuf {
    char *p;
    size_t len, cap;
    int oom;
} tbuf;

/* Room for n more bytes (and the NUL after them); sets oom on failure. */
void cairn__tbuf_grow(tbuf *b, size_t n);

static inline void cairn__tbuf_put(tbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap)
        cairn__tbuf_grow(b, n);
    if (b->oom)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}
/* Room for n bytes more, at once. */
void cairn__tbuf_reserve(tbuf *b, size_t n);
/* s[0..n) as a JSON string (quoted, escaped). */
void cairn__tbuf_str(tbuf *b, const char *s, size_t n);

/* The entry (memory id mid, content, metadata read into *sm, scope) as the
 * JSON object cairn_stream_list returns, with "score" when with_score. */
void cairn__stream_entry_write(tbuf *b, const stream_meta *sm, const char *mid, const char *content,
                               size_t content_len, const char *scope, int with_score,
                               double score);

/* The handle's cycle index brought up to the state (m->mu held; the state
 * caught up). CAIRN_ENOMEM. */
int cairn__cycles_refresh(cairn_mem *m);

/* The (cycle, seq) rows of namespace nsi in cycle order, *n of them (none:
 * NULL, 0). Valid until the next refresh. */
typedef struct crow {
    int64_t cycle;
    uint64_t seq;
    uint32_t eid_len, rest_len; /* of its metadata's light read (0: none), to
                                   check and reuse at the next read */
} crow;

/* The light read of x's metadata using what row r remembers of it (checked
 * against the bytes, never trusted), else read anew. 0, or -1 as
 * cairn__stream_meta_light. */
int cairn__stream_meta_row(const crow *r, const char *meta, stream_meta *out);
const crow *cairn__cycles_rows(cairn_mem *m, uint32_t nsi, size_t *n);

#endif /* CAIRN_TIER_CYCLES_H */
