/*
 * render.h - the JSON of what the C API returns (a memory, a recall hit's
 * explanation, a causal node or edge, a pattern), one definition for the
 * tool interface and the `cairn` tool's --format json, so both print the
 * same objects with the same keys.
 *
 * Memories are Engram's objects (camelCase; times in ms since the epoch);
 * nodes, edges and patterns are ReflexionMemory's (snake_case; times as
 * ISO 8601 text, null when unset).
 */
#ifndef CAIRN_RENDER_H
#define CAIRN_RENDER_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "cairn.h"
#include "memrec.h"

/* An integer as its exact digits: cairn__json_add_int (memrec.h). */
/* A time as ISO 8601 text, or null when ms is 0 (unset). */
void cairn__json_add_time(cJSON *o, const char *name, int64_t ms);

/* {id, content, category, importance, createdAt, accessedAt, accessCount,
 * expiresAt (null: never), metadata, namespace} */
cJSON *cairn__json_memory(const cairn_memory *m);
/* Which side found a hit: "lexical", "semantic" or "both". */
const char *cairn__json_source(unsigned source);
/* Add "explain": every component of a hit's score. */
void cairn__json_explain(cJSON *o, const cairn_recall_hit *h);

/* {id, type, label, episodes, frequency, success_rate, created} */
cJSON *cairn__json_node(const cairn_causal_node *n);
/* {source, target, type, weight, evidence_count, episodes, created} */
cJSON *cairn__json_edge(const cairn_causal_edge *e);
/* {id, name, description, trigger, action, success_rate, occurrences,
 * last_used, episodes, created} */
cJSON *cairn__json_pattern(const cairn_pattern *p);

#endif /* CAIRN_RENDER_H */
