/*
 * render.c - see render.h.
 */
#include "render.h"

#include <stdio.h>

#include "civil.h"

void cairn__json_add_time(cJSON *o, const char *name, int64_t ms)
{
    char t[40];
    if (ms == 0) {
        cJSON_AddNullToObject(o, name);
        return;
    }
    cairn__iso_time(ms, t, sizeof t);
    cJSON_AddStringToObject(o, name, t);
}

static cJSON *str_array(char **s, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(s[i]));
    return a;
}

cJSON *cairn__json_memory(const cairn_memory *m)
{
    cJSON *o = cJSON_CreateObject(), *meta = cJSON_Parse(m->metadata);
    if (o == NULL) {
        cJSON_Delete(meta);
        return NULL;
    }
    cJSON_AddStringToObject(o, "id", m->id);
    cJSON_AddStringToObject(o, "content", m->content);
    cJSON_AddStringToObject(o, "category", m->category);
    cJSON_AddNumberToObject(o, "importance", m->importance);
    cairn__json_add_int(o, "createdAt", m->created_at);
    cairn__json_add_int(o, "accessedAt", m->accessed_at);
    cairn__json_add_int(o, "accessCount", (int64_t)m->access_count);
    if (m->expires_at)
        cairn__json_add_int(o, "expiresAt", m->expires_at);
    else
        cJSON_AddNullToObject(o, "expiresAt");
    cJSON_AddItemToObject(o, "metadata", meta ? meta : cJSON_CreateObject());
    cJSON_AddStringToObject(o, "namespace", m->ns);
    return o;
}

const char *cairn__json_source(unsigned source)
{
    if (source == (CAIRN_SOURCE_LEXICAL | CAIRN_SOURCE_SEMANTIC))
        return "both";
    return source == CAIRN_SOURCE_SEMANTIC ? "semantic" : "lexical";
}

void cairn__json_explain(cJSON *o, const cairn_recall_hit *h)
{
    cJSON *x = cJSON_AddObjectToObject(o, "explain");
    cJSON_AddStringToObject(x, "source", cairn__json_source(h->source));
    cJSON_AddNumberToObject(x, "bm25", h->bm25);
    cJSON_AddNumberToObject(x, "lexicalRank", h->lexical_rank);
    cJSON_AddNumberToObject(x, "similarity", h->similarity);
    cJSON_AddNumberToObject(x, "semanticRank", h->semantic_rank);
    cJSON_AddNumberToObject(x, "relevance", h->relevance);
    cJSON_AddNumberToObject(x, "importance", h->importance);
    cJSON_AddNumberToObject(x, "recency", h->recency);
    cJSON_AddNumberToObject(x, "access", h->access);
}

cJSON *cairn__json_node(const cairn_causal_node *n)
{
    cJSON *o = cJSON_CreateObject();
    const char *t = cairn_node_type_name(n->type);
    cJSON_AddStringToObject(o, "id", n->id);
    cJSON_AddStringToObject(o, "type", t ? t : "unknown");
    cJSON_AddStringToObject(o, "label", n->label ? n->label : "");
    cJSON_AddItemToObject(o, "episodes", str_array(n->episodes, n->n_episodes));
    cairn__json_add_int(o, "frequency", (int64_t)n->frequency);
    cJSON_AddNumberToObject(o, "success_rate", n->success_rate);
    cairn__json_add_time(o, "created", n->created_ms);
    return o;
}

cJSON *cairn__json_edge(const cairn_causal_edge *e)
{
    cJSON *o = cJSON_CreateObject();
    const char *t = cairn_edge_type_name(e->type);
    cJSON_AddStringToObject(o, "source", e->source);
    cJSON_AddStringToObject(o, "target", e->target);
    cJSON_AddStringToObject(o, "type", t ? t : "unknown");
    cJSON_AddNumberToObject(o, "weight", e->weight);
    cairn__json_add_int(o, "evidence_count", (int64_t)e->evidence_count);
    cJSON_AddItemToObject(o, "episodes", str_array(e->episodes, e->n_episodes));
    cairn__json_add_time(o, "created", e->created_ms);
    return o;
}

cJSON *cairn__json_pattern(const cairn_pattern *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", p->id);
    cJSON_AddStringToObject(o, "name", p->name ? p->name : "");
    cJSON_AddStringToObject(o, "description", p->description ? p->description : "");
    cJSON_AddStringToObject(o, "trigger", p->trigger ? p->trigger : "");
    cJSON_AddStringToObject(o, "action", p->action ? p->action : "");
    cJSON_AddNumberToObject(o, "success_rate", p->success_rate);
    cairn__json_add_int(o, "occurrences", (int64_t)p->occurrences);
    cairn__json_add_time(o, "last_used", p->last_used_ms);
    cJSON_AddItemToObject(o, "episodes", str_array(p->episodes, p->n_episodes));
    cairn__json_add_time(o, "created", p->created_ms);
    return o;
}
