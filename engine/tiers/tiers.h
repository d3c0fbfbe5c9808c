/*
 * tiers.h - what the cognitive tiers (stream.c, core.c, tiers.c) share:
 * scopes and the namespaces they name, the metadata that marks a memory
 * as a tier's, token estimates, and JSON out. format-spec/tiers.md has
 * the layout; cairn.h the public calls.
 */
#ifndef CAIRN_TIERS_H
#define CAIRN_TIERS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "cairn.h"
#include "memstate.h"

/* The tiers; each is the namespace "<tier>@<scope>". */
#define TIER_STREAM "stream"
#define TIER_CORE "core"
#define TIER_REFLECTION "reflection"
#define TIER_ARCHIVAL "archival"

/* A scope, checked, and the scopes a search in it sees (itself first). */
typedef struct tier_scope {
    char name[CAIRN_SCOPE_MAX + 1];
    char chain[3][CAIRN_SCOPE_MAX + 1];
    size_t n_chain;
} tier_scope;

/* Check scope (NULL: "global") into *s. Errors: CAIRN_EQUERY (named in
 * cairn_mem_errmsg(m)). */
int cairn__tier_scope(cairn_mem *m, const char *scope, tier_scope *s);

/* "<tier>@<scope>" into buf (cap >= CAIRN_SCOPE_MAX + 16). */
void cairn__tier_ns(char *buf, size_t cap, const char *tier, const char *scope);

/* The memory's metadata if it is an entry of tier (its "tier" member), else
 * NULL (a memory stored in the namespace some other way). The caller
 * frees it with cJSON_Delete. */
cJSON *cairn__tier_meta(const ment *x, const char *tier);

/* The scope of a tier namespace ("stream@repo:a/b" -> "repo:a/b"). */
const char *cairn__tier_ns_scope(const cairn_mem *m, const ment *x);

/* An integer member of o within lo..hi into *v; absent: *v = def and
 * CAIRN_OK if def_ok, else CAIRN_EQUERY. */
int cairn__tier_int(cairn_mem *m, const cJSON *o, const char *name, int64_t lo, int64_t hi,
                    int64_t def, int def_ok, int64_t *v);

/* A string member of o, 1..max bytes of valid text; absent: *v = def
 * (CAIRN_EQUERY when def is NULL and required). */
int cairn__tier_str(cairn_mem *m, const cJSON *o, const char *name, size_t max,
                    const char *def, int required, const char **v);

/* Parse an ISO 8601 UTC time ("2026-02-09T23:58:36.596Z", also without
 * milliseconds or with +00:00) into ms. 0 on success, -1 if it is not one. */
int cairn__tier_parse_time(const char *s, int64_t *ms);

/* A new entry id: a random UUID (version 4) into buf (37 bytes). */
void cairn__tier_uuid(char *buf);

/* The memory id of a tier entry with entry id eid: "t" + 16 hex digits of
 * its hash with the namespace, so that adding it again finds it. */
void cairn__tier_mem_id(const char *ns, const char *eid, char *out);

/* The store's tier settings (cairn_config): the reflection threshold, the
 * core's and a section's token budgets. */
typedef struct tier_settings {
    int64_t reflect, core, section;
} tier_settings;
tier_settings cairn__tier_settings(cairn_mem *m);

/* Print o (which it frees) into *out unless out is NULL. CAIRN_ENOMEM. */
int cairn__tier_emit(cairn_mem *m, cJSON *o, char **out);

/* The importance summed over the stream entries of scope stored after
 * its last reflection, and that reflection's cycle, time and memory seq
 * (0 when there is none). Reads the two namespaces. */
typedef struct tier_reflect_state {
    int64_t accumulated;
    int64_t last_cycle;
    int64_t last_time;
    uint64_t last_seq;
    int has_last;
} tier_reflect_state;

int cairn__tier_reflect_state(cairn_mem *m, const char *scope, tier_reflect_state *out);

#endif /* CAIRN_TIERS_H */
