/*
 * core.c - core memory: the named sections an agent team keeps in every
 * prompt (coreMemoryUpdate, coreMemoryAppend of the cognitive memory
 * design, with the sections the design review settled on).
 *
 * Each value is a memory of "core@SCOPE" with metadata {"tier": "core",
 * "section": S} (and "role" for roleState); its content is the value as
 * given (JSON text or plain text). Replacing an updatable section stores
 * the new value, then removes the old one (reason "core.set"); the cap of
 * recentlyShipped removes the oldest (reason "core.cap"); a removed item
 * can be brought back with cairn_mem_restore. The core as of any seq is
 * the fold of these records (format-spec/tiers.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "civil.h"
#include "tiers.h"
#include "utf8.h"

#define N_SECTIONS 6
static const char *const sections[N_SECTIONS] = {"sprint",   "roleState", "threads",
                                                 "recentlyShipped", "blockers", "lessons"};
#define ROLE_MAX 64
#define VALUE_MAX (64u * 1024)
#define ITEMS_MAX 4096

static int section_index(const char *s)
{
    for (int i = 0; s != NULL && i < N_SECTIONS; i++)
        if (strcmp(s, sections[i]) == 0)
            return i;
    return -1;
}

static int updatable(int si)
{
    return si == 0 || si == 1;
}

/* One value of the core as read. */
typedef struct citem {
    int section;
    char id[CAIRN_MEM_ID_MAX + 1];
    char role[ROLE_MAX + 1];
    char *value;
    size_t tokens;
    int64_t added;
    uint64_t seq;
} citem;

typedef struct core_read {
    citem *items;
    size_t n, cap;
    size_t tokens[N_SECTIONS];
    size_t total;
} core_read;

static void core_free(core_read *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->items[i].value);
    free(c->items);
}

static int on_core(void *user, cairn_mem *m, const ment *x)
{
    core_read *c = user;
    cJSON *meta = cairn__tier_meta(x, TIER_CORE);
    const char *sec, *role, *text;
    citem *it;
    int si, rc;
    if (meta == NULL)
        return 0;
    sec = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "section"));
    role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "role"));
    if ((si = section_index(sec)) < 0 || (si == 1 && role == NULL)) {
        cJSON_Delete(meta);
        return 0;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 32;
        citem *p = realloc(c->items, cap * sizeof *p);
        if (p == NULL) {
            cJSON_Delete(meta);
            return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        }
        c->items = p;
        c->cap = cap;
    }
    it = &c->items[c->n];
    memset(it, 0, sizeof *it);
    it->section = si;
    snprintf(it->id, sizeof it->id, "%s", x->id);
    snprintf(it->role, sizeof it->role, "%s", role ? role : "");
    if ((rc = cairn__mem_text(m, x, &text)) != CAIRN_OK) {
        cJSON_Delete(meta);
        return rc;
    }
    if ((it->value = malloc(x->content_len + 1)) == NULL) {
        cJSON_Delete(meta);
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    }
    memcpy(it->value, text, x->content_len);
    it->value[x->content_len] = 0;
    it->tokens = cairn_tokens_estimate(text, x->content_len);
    it->added = x->created;
    it->seq = x->seq;
    c->tokens[si] += it->tokens;
    c->total += it->tokens;
    c->n++;
    cJSON_Delete(meta);
    return 0;
}

/* The live values of scope's core, oldest first. An updatable section
 * holds one value (per role): were there more (a crash between storing a
 * value and removing the one it replaces), the newest counts and the
 * others are left out of the sums here and removed by the next set. */
static int core_load(cairn_mem *m, const char *scope, core_read *c)
{
    char ns[CAIRN_SCOPE_MAX + 16];
    const char *one[1] = {ns};
    int rc;
    memset(c, 0, sizeof *c);
    cairn__tier_ns(ns, sizeof ns, TIER_CORE, scope);
    if ((rc = cairn__mem_scan(m, one, 1, 0, on_core, c)) != CAIRN_OK)
        return rc;
    for (size_t i = 0; i < c->n; i++) {
        citem *a = &c->items[i];
        if (!updatable(a->section) || a->tokens == (size_t)-1)
            continue;
        for (size_t j = i + 1; j < c->n; j++) {
            citem *b = &c->items[j];
            if (b->section == a->section && strcmp(b->role, a->role) == 0) {
                c->tokens[a->section] -= a->tokens;
                c->total -= a->tokens;
                a->tokens = (size_t)-1; /* superseded */
                break;
            }
        }
    }
    return CAIRN_OK;
}

static int superseded(const citem *it)
{
    return it->tokens == (size_t)-1;
}

/* A value as JSON: parsed if it is JSON text, else the text as a string. */
static cJSON *value_json(const char *v)
{
    cJSON *j = cJSON_Parse(v);
    return j != NULL ? j : cJSON_CreateString(v);
}

static cJSON *item_json(const citem *it)
{
    cJSON *o = cJSON_CreateObject();
    char t[40];
    cJSON_AddStringToObject(o, "id", it->id);
    cJSON_AddItemToObject(o, "value", value_json(it->value));
    cJSON_AddNumberToObject(o, "tokens", (double)it->tokens);
    cairn__iso_time(it->added, t, sizeof t);
    cJSON_AddStringToObject(o, "added", t);
    return o;
}

/* The section si of c as {"value"} or {"items"}, to o. */
static void add_section(cJSON *o, const core_read *c, int si)
{
    if (si == 0) {
        const citem *last = NULL;
        for (size_t i = 0; i < c->n; i++)
            if (c->items[i].section == 0 && !superseded(&c->items[i]))
                last = &c->items[i];
        cJSON_AddItemToObject(o, sections[si], last ? value_json(last->value) : cJSON_CreateNull());
    } else if (si == 1) {
        cJSON *r = cJSON_AddObjectToObject(o, sections[si]);
        for (size_t i = 0; i < c->n; i++)
            if (c->items[i].section == 1 && !superseded(&c->items[i]))
                cJSON_AddItemToObject(r, c->items[i].role, value_json(c->items[i].value));
    } else {
        cJSON *a = cJSON_AddArrayToObject(o, sections[si]);
        for (size_t i = 0; i < c->n; i++)
            if (c->items[i].section == si)
                cJSON_AddItemToArray(a, item_json(&c->items[i]));
    }
}

static int check_section(cairn_mem *m, const char *section, int *si)
{
    if ((*si = section_index(section)) < 0)
        return cairn__mem_fail(m, CAIRN_EQUERY, "section '%.40s': sprint, roleState, threads, "
                               "recentlyShipped, blockers or lessons", section ? section : "");
    return CAIRN_OK;
}

int cairn_core_show(cairn_mem *m, const char *scope, const char *section, char **out_json)
{
    tier_scope sc;
    tier_settings ts = cairn__tier_settings(m);
    core_read c;
    cJSON *o, *t;
    int rc, si = -1;

    *out_json = NULL;
    if ((rc = cairn__tier_scope(m, scope, &sc)) != CAIRN_OK ||
        (section != NULL && (rc = check_section(m, section, &si)) != CAIRN_OK))
        return rc;
    if ((rc = core_load(m, sc.name, &c)) != CAIRN_OK) {
        core_free(&c);
        return rc;
    }
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "scope", sc.name);
    if (si >= 0) {
        cJSON *tmp = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "section", sections[si]);
        add_section(tmp, &c, si);
        cJSON_AddItemToObject(o, si == 0 || si == 1 ? "value" : "items",
                              cJSON_DetachItemFromObjectCaseSensitive(tmp, sections[si]));
        cJSON_Delete(tmp);
        cJSON_AddNumberToObject(o, "tokens", (double)c.tokens[si]);
        cJSON_AddNumberToObject(o, "budget", (double)ts.section);
    } else {
        cJSON *s = cJSON_AddObjectToObject(o, "sections"), *per;
        for (int i = 0; i < N_SECTIONS; i++)
            add_section(s, &c, i);
        t = cJSON_AddObjectToObject(o, "tokens");
        cJSON_AddNumberToObject(t, "total", (double)c.total);
        cJSON_AddNumberToObject(t, "budget", (double)ts.core);
        cJSON_AddNumberToObject(t, "sectionBudget", (double)ts.section);
        per = cJSON_AddObjectToObject(t, "sections");
        for (int i = 0; i < N_SECTIONS; i++)
            cJSON_AddNumberToObject(per, sections[i], (double)c.tokens[i]);
    }
    core_free(&c);
    return cairn__tier_emit(m, o, out_json);
}

/* Would the core, with `minus` tokens of section si replaced by `plus`,
 * stay within the budgets? */
static int check_budget(cairn_mem *m, const core_read *c, int si, size_t minus, size_t plus)
{
    tier_settings ts = cairn__tier_settings(m);
    size_t sec = c->tokens[si] - minus + plus, all = c->total - minus + plus;
    if ((int64_t)sec > ts.section)
        return cairn__mem_fail(m, CAIRN_EINVAL, "core section %s would hold %zu tokens, over its "
                               "budget of %lld (it holds %zu): remove items first", sections[si], sec,
                               (long long)ts.section, c->tokens[si]);
    if ((int64_t)all > ts.core)
        return cairn__mem_fail(m, CAIRN_EINVAL, "the core would hold %zu tokens, over its budget "
                               "of %lld (it holds %zu): remove items first", all, (long long)ts.core,
                               c->total);
    return CAIRN_OK;
}

static int check_value(cairn_mem *m, const char *value)
{
    cairn__err e;
    size_t n = value ? strlen(value) : 0;
    if (n == 0 || n > VALUE_MAX)
        return cairn__mem_fail(m, CAIRN_EQUERY, "value: 1..%u bytes", VALUE_MAX);
    if (cairn__utf8_check(&e, "value", value, n) != CAIRN_OK)
        return cairn__mem_fail(m, CAIRN_EQUERY, "%s", e.msg);
    return CAIRN_OK;
}

static int store_value(cairn_mem *m, const char *scope, int si, const char *role,
                       const char *value, const float *vec, cairn_memory **out)
{
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    char ns[CAIRN_SCOPE_MAX + 16], *meta_text;
    cJSON *meta = cJSON_CreateObject();
    int rc;
    cairn__tier_ns(ns, sizeof ns, TIER_CORE, scope);
    cJSON_AddStringToObject(meta, "tier", TIER_CORE);
    cJSON_AddStringToObject(meta, "section", sections[si]);
    if (role != NULL)
        cJSON_AddStringToObject(meta, "role", role);
    meta_text = cJSON_PrintUnformatted(meta);
    cJSON_Delete(meta);
    if (meta_text == NULL)
        return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
    so.ns = ns;
    so.category = "core";
    so.importance = 1.0; /* core memory is always in the prompt */
    so.metadata = meta_text;
    so.keep_duplicate = 1; /* the same text may be in two sections */
    so.no_limit = 1;
    so.vector = vec;
    rc = cairn_mem_store(m, value, &so, out, NULL);
    free(meta_text);
    return rc;
}

int cairn_core_set(cairn_mem *m, const char *scope, const char *section, const char *role,
                   const char *value, char **out_json)
{
    tier_scope sc;
    core_read c;
    cairn_memory *mem = NULL;
    size_t old_tokens = 0, tokens;
    const citem *cur = NULL;
    float *vec = NULL;
    uint64_t vec_gen = 0;
    cairn__err e;
    cJSON *o;
    int rc, si;

    if (out_json != NULL)
        *out_json = NULL;
    memset(&c, 0, sizeof c);
    if ((rc = cairn__tier_scope(m, scope, &sc)) != CAIRN_OK ||
        (rc = check_section(m, section, &si)) != CAIRN_OK || (rc = check_value(m, value)) != CAIRN_OK)
        return rc;
    if (!updatable(si))
        return cairn__mem_fail(m, CAIRN_EQUERY, "section %s takes items: append them", sections[si]);
    if (si == 1 && (role == NULL || role[0] == 0 || strlen(role) > ROLE_MAX ||
                    cairn__utf8_check(&e, "role", role, strlen(role)) != CAIRN_OK))
        return cairn__mem_fail(m, CAIRN_EQUERY, "roleState needs a role (1..%d bytes of text)", ROLE_MAX);
    if (si == 0 && role != NULL)
        return cairn__mem_fail(m, CAIRN_EQUERY, "sprint has no roles");
    /* the vector first: no writer of another process waits for the embedder */
    if ((rc = cairn__mem_embed_one(m, value, &vec, &vec_gen)) != CAIRN_OK)
        return rc;
    if ((rc = cairn__mem_turn_hold(m)) != CAIRN_OK) {
        free(vec);
        return rc;
    }
    if ((rc = core_load(m, sc.name, &c)) != CAIRN_OK)
        goto out;
    for (size_t i = 0; i < c.n; i++)
        if (c.items[i].section == si && !superseded(&c.items[i]) &&
            (si == 0 || strcmp(c.items[i].role, role) == 0))
            cur = &c.items[i];
    tokens = cairn_tokens_estimate(value, strlen(value));
    old_tokens = cur ? cur->tokens : 0;
    if (cur == NULL || strcmp(cur->value, value) != 0) {
        if ((rc = check_budget(m, &c, si, old_tokens, tokens)) != CAIRN_OK ||
            (rc = store_value(m, sc.name, si, si == 1 ? role : NULL, value,
                              cairn__mem_embedder_is(m, vec_gen) ? vec : NULL, &mem)) != CAIRN_OK)
            goto out;
        /* the values it replaces: the current one, and any left over */
        for (size_t i = 0; i < c.n && rc == CAIRN_OK; i++)
            if (c.items[i].section == si && (si == 0 || strcmp(c.items[i].role, role) == 0))
                rc = cairn_mem_delete(m, c.items[i].id, "core.set");
        if (rc != CAIRN_OK)
            goto out;
    }
    if (out_json != NULL) {
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "section", sections[si]);
        if (si == 1)
            cJSON_AddStringToObject(o, "role", role);
        else
            cJSON_AddNullToObject(o, "role");
        cJSON_AddItemToObject(o, "value", value_json(value));
        cJSON_AddBoolToObject(o, "changed", mem != NULL);
        cJSON_AddNumberToObject(o, "tokens", (double)tokens);
        if (mem != NULL)
            cJSON_AddStringToObject(o, "id", mem->id);
        else
            cJSON_AddStringToObject(o, "id", cur->id);
        rc = cairn__tier_emit(m, o, out_json);
    }
out:
    rc = cairn__mem_turn_release(m, rc);
    free(vec);
    cairn_mem_free(mem);
    core_free(&c);
    return rc;
}

int cairn_core_append(cairn_mem *m, const char *scope, const char *section, const char *value,
                      char **out_json)
{
    tier_scope sc;
    core_read c;
    cairn_memory *mem = NULL;
    const citem *same = NULL;
    size_t tokens, count = 0;
    float *vec = NULL;
    uint64_t vec_gen = 0;
    cJSON *o, *removed;
    int rc, si;

    if (out_json != NULL)
        *out_json = NULL;
    memset(&c, 0, sizeof c);
    if ((rc = cairn__tier_scope(m, scope, &sc)) != CAIRN_OK ||
        (rc = check_section(m, section, &si)) != CAIRN_OK || (rc = check_value(m, value)) != CAIRN_OK)
        return rc;
    if (updatable(si))
        return cairn__mem_fail(m, CAIRN_EQUERY, "section %s is replaced whole: set it", sections[si]);
    if ((rc = cairn__mem_embed_one(m, value, &vec, &vec_gen)) != CAIRN_OK)
        return rc;
    if ((rc = cairn__mem_turn_hold(m)) != CAIRN_OK) {
        free(vec);
        return rc;
    }
    if ((rc = core_load(m, sc.name, &c)) != CAIRN_OK)
        goto out;
    for (size_t i = 0; i < c.n; i++)
        if (c.items[i].section == si) {
            count++;
            if (strcmp(c.items[i].value, value) == 0)
                same = &c.items[i];
        }
    if (count >= ITEMS_MAX && same == NULL) {
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "section %s holds %d items, the most it takes",
                             sections[si], ITEMS_MAX);
        goto out;
    }
    tokens = cairn_tokens_estimate(value, strlen(value));
    removed = cJSON_CreateArray();
    if (same == NULL) {
        /* recentlyShipped keeps the last ones: what the cap removes does not
         * count against the budget */
        size_t drop = si == 3 && count >= CAIRN_CORE_SHIPPED_MAX ? count + 1 - CAIRN_CORE_SHIPPED_MAX : 0;
        size_t freed = 0, k = 0;
        for (size_t i = 0; i < c.n && k < drop; i++)
            if (c.items[i].section == si) {
                freed += c.items[i].tokens;
                k++;
            }
        if ((rc = check_budget(m, &c, si, freed, tokens)) != CAIRN_OK ||
            (rc = store_value(m, sc.name, si, NULL, value,
                              cairn__mem_embedder_is(m, vec_gen) ? vec : NULL, &mem)) != CAIRN_OK) {
            cJSON_Delete(removed);
            goto out;
        }
        for (size_t i = 0, k2 = 0; i < c.n && k2 < drop && rc == CAIRN_OK; i++)
            if (c.items[i].section == si) {
                rc = cairn_mem_delete(m, c.items[i].id, "core.cap");
                if (rc == CAIRN_OK)
                    cJSON_AddItemToArray(removed, cJSON_CreateString(c.items[i].id));
                k2++;
            }
        if (rc != CAIRN_OK) {
            cJSON_Delete(removed);
            goto out;
        }
    }
    if (out_json != NULL) {
        citem it;
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "section", sections[si]);
        if (same != NULL) {
            cJSON_AddItemToObject(o, "item", item_json(same));
        } else {
            memset(&it, 0, sizeof it);
            snprintf(it.id, sizeof it.id, "%s", mem->id);
            it.value = mem->content;
            it.tokens = tokens;
            it.added = mem->created_at;
            cJSON_AddItemToObject(o, "item", item_json(&it));
        }
        cJSON_AddBoolToObject(o, "existed", same != NULL);
        cJSON_AddItemToObject(o, "removed", removed);
        rc = cairn__tier_emit(m, o, out_json);
    } else {
        cJSON_Delete(removed);
    }
out:
    rc = cairn__mem_turn_release(m, rc);
    free(vec);
    cairn_mem_free(mem);
    core_free(&c);
    return rc;
}

int cairn_core_remove(cairn_mem *m, const char *scope, const char *section, const char *item_id,
                      char **out_json)
{
    tier_scope sc;
    core_read c;
    cJSON *o;
    int rc, si, found = 0;

    if (out_json != NULL)
        *out_json = NULL;
    memset(&c, 0, sizeof c);
    if ((rc = cairn__tier_scope(m, scope, &sc)) != CAIRN_OK ||
        (rc = check_section(m, section, &si)) != CAIRN_OK)
        return rc;
    if (updatable(si))
        return cairn__mem_fail(m, CAIRN_EQUERY, "section %s is replaced whole, not removed by item",
                               sections[si]);
    if ((rc = core_load(m, sc.name, &c)) != CAIRN_OK)
        goto out;
    for (size_t i = 0; i < c.n; i++)
        found |= c.items[i].section == si && item_id != NULL && strcmp(c.items[i].id, item_id) == 0;
    if (!found) {
        rc = cairn__mem_fail(m, CAIRN_ENOTFOUND, "section %s of %s holds no item %.40s", sections[si],
                             sc.name, item_id ? item_id : "");
        goto out;
    }
    if ((rc = cairn_mem_delete(m, item_id, "core.remove")) != CAIRN_OK)
        goto out;
    if (out_json != NULL) {
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "section", sections[si]);
        cJSON_AddStringToObject(o, "removed", item_id);
        rc = cairn__tier_emit(m, o, out_json);
    }
out:
    core_free(&c);
    return rc;
}
