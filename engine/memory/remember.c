/*
 * remember.c - cairn_mem_remember: an LLM proposes memories from a
 * conversation; those novel enough are stored (cairn.h).
 */
#include "remember.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn.h"
#include "memrec.h"
#include "memstate.h"
#include "memvec.h"
#include "utf8.h"

#define REM_MAX_CANDIDATES 1000
#define REM_SURPRISE_DEFAULT 0.15

static const char PROMPT_HEAD[] =
    "Extract the facts, preferences, skills, decisions and other details worth\n"
    "remembering from the conversation below. Answer with a JSON array only, one\n"
    "object per memory: {\"content\": \"one self-contained sentence\", \"category\":\n"
    "\"fact\" | \"preference\" | \"skill\" | \"episode\" | \"context\", \"importance\": a\n"
    "number from 0 to 1}. Answer [] when there is nothing worth remembering.\n"
    "\n"
    "Conversation:\n";

void cairn__remember_free_cands(rem_cand *c, size_t n)
{
    for (size_t i = 0; c != NULL && i < n; i++) {
        free(c[i].content);
        free(c[i].category);
    }
    free(c);
}

static char *dup_s(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

/* The JSON inside an optional ``` fence: [*b, *e). */
static void unfence(const char *s, size_t len, size_t *b, size_t *e)
{
    size_t i = 0, j = len;
    while (i < j && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    while (j > i && (s[j - 1] == ' ' || s[j - 1] == '\t' || s[j - 1] == '\r' || s[j - 1] == '\n'))
        j--;
    if (j - i >= 6 && memcmp(s + i, "```", 3) == 0 && memcmp(s + j - 3, "```", 3) == 0) {
        i += 3;
        while (i < j - 3 && s[i] != '\n') /* the language tag, if any */
            i++;
        j -= 3;
    }
    *b = i;
    *e = j;
}

int cairn__remember_parse(const char *answer, size_t len, rem_cand **out, size_t *n, cairn__err *e)
{
    size_t b, en, i = 0;
    cJSON *root, *o;
    rem_cand *c = NULL;
    int rc = CAIRN_OK;

    *out = NULL;
    *n = 0;
    unfence(answer, len, &b, &en);
    root = cJSON_ParseWithLength(answer + b, en - b);
    if (root == NULL || !cJSON_IsArray(root)) {
        cJSON_Delete(root);
        return cairn__fail(e, CAIRN_EINVAL, "LLM answer: not a JSON array of memories");
    }
    if (cJSON_GetArraySize(root) > REM_MAX_CANDIDATES) {
        cJSON_Delete(root);
        return cairn__fail(e, CAIRN_EINVAL, "LLM answer: more than %d memories",
                           REM_MAX_CANDIDATES);
    }
    /* The rule for text (utf8.h): a \u0000 would cut a content unseen. */
    if (cairn__utf8_check_json(e, "LLM answer: ", "item", answer + b, en - b) != CAIRN_OK) {
        cJSON_Delete(root);
        return CAIRN_EINVAL;
    }
    c = calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof *c);
    if (c == NULL) {
        cJSON_Delete(root);
        return cairn__fail(e, CAIRN_ENOMEM, "no memory");
    }
    cJSON_ArrayForEach(o, root) {
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(o, "content");
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(o, "category");
        const cJSON *imp = cJSON_GetObjectItemCaseSensitive(o, "importance");
        if (!cJSON_IsObject(o)) {
            rc = cairn__fail(e, CAIRN_EINVAL, "LLM answer: item %zu is not an object", i + 1);
            break;
        }
        if (!cJSON_IsString(ct) || ct->valuestring[0] == 0 ||
            strlen(ct->valuestring) > MEM_CONTENT_MAX) {
            rc = cairn__fail(e, CAIRN_EINVAL, "LLM answer: item %zu: \"content\" is not a "
                             "non-empty string of at most 1 MiB", i + 1);
            break;
        }
        if (cat != NULL && !cJSON_IsNull(cat) &&
            (!cJSON_IsString(cat) || cat->valuestring[0] == 0 ||
             strlen(cat->valuestring) > MEM_CATEGORY_MAX)) {
            rc = cairn__fail(e, CAIRN_EINVAL, "LLM answer: item %zu: \"category\" is not a "
                             "string of 1..%d bytes", i + 1, MEM_CATEGORY_MAX);
            break;
        }
        if (imp != NULL && !cJSON_IsNull(imp) &&
            (!cJSON_IsNumber(imp) || !(imp->valuedouble >= 0 && imp->valuedouble <= 1))) {
            rc = cairn__fail(e, CAIRN_EINVAL, "LLM answer: item %zu: \"importance\" is not a "
                             "number from 0 to 1", i + 1);
            break;
        }
        c[i].content = dup_s(ct->valuestring);
        c[i].category = dup_s(cJSON_IsString(cat) ? cat->valuestring : "fact");
        c[i].importance = cJSON_IsNumber(imp) ? imp->valuedouble : 0.5;
        i++;
        if (c[i - 1].content == NULL || c[i - 1].category == NULL) {
            rc = cairn__fail(e, CAIRN_ENOMEM, "no memory");
            break;
        }
    }
    cJSON_Delete(root);
    if (rc != CAIRN_OK) {
        cairn__remember_free_cands(c, i);
        return rc;
    }
    *out = c;
    *n = i;
    return CAIRN_OK;
}

int cairn__remember_prompt(const char *messages, size_t len, char **prompt, cairn__err *e)
{
    cJSON *root = cJSON_ParseWithLength(messages, len), *o;
    size_t cap = sizeof PROMPT_HEAD + len * 2 + 64, k, i = 0;
    char *p;

    *prompt = NULL;
    if (root == NULL || !cJSON_IsArray(root)) {
        cJSON_Delete(root);
        return cairn__fail(e, CAIRN_EINVAL, "messages: not a JSON array of {role, content}");
    }
    if (cairn__utf8_check_json(e, "messages: ", "item", messages, len) != CAIRN_OK) {
        cJSON_Delete(root);
        return CAIRN_EINVAL;
    }
    cJSON_ArrayForEach(o, root) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "role");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "content");
        i++;
        if (!cJSON_IsString(r) || !cJSON_IsString(c)) {
            cJSON_Delete(root);
            return cairn__fail(e, CAIRN_EINVAL, "messages: item %zu needs string \"role\" and "
                               "\"content\"", i);
        }
    }
    if (i == 0) {
        cJSON_Delete(root);
        return cairn__fail(e, CAIRN_EINVAL, "messages: the conversation is empty");
    }
    if ((p = malloc(cap)) == NULL) {
        cJSON_Delete(root);
        return cairn__fail(e, CAIRN_ENOMEM, "no memory");
    }
    memcpy(p, PROMPT_HEAD, sizeof PROMPT_HEAD - 1);
    k = sizeof PROMPT_HEAD - 1;
    cJSON_ArrayForEach(o, root) {
        const char *r = cJSON_GetObjectItemCaseSensitive(o, "role")->valuestring;
        const char *c = cJSON_GetObjectItemCaseSensitive(o, "content")->valuestring;
        size_t need = strlen(r) + strlen(c) + 4;
        if (k + need + 1 > cap) {
            char *q;
            cap = (k + need + 1) * 2;
            if ((q = realloc(p, cap)) == NULL) {
                free(p);
                cJSON_Delete(root);
                return cairn__fail(e, CAIRN_ENOMEM, "no memory");
            }
            p = q;
        }
        k += (size_t)snprintf(p + k, cap - k, "%s: %s\n", r, c);
    }
    p[k] = 0;
    cJSON_Delete(root);
    *prompt = p;
    return CAIRN_OK;
}

void cairn_remember_free(cairn_remember_item *items, size_t n)
{
    for (size_t i = 0; items != NULL && i < n; i++) {
        free(items[i].content);
        free(items[i].category);
    }
    free(items);
}

/* Novelty of text in namespace ns: 1 - the best similarity (under mu). */
static int novelty(cairn_mem *m, const char *ns, const char *text, double *nov, char *nearest,
                   float **vec)
{
    long nsi = cairn__mem_ns_index(m, ns, strlen(ns), 0);
    vec_query vq;
    vec_hit h;
    size_t nh = 0;
    float *buf = NULL;
    int rc;

    *nov = 1;
    nearest[0] = 0;
    *vec = NULL;
    if (m->emb.dim == 0 || (m->emb.embed == NULL && m->emb.embed_batch == NULL))
        return CAIRN_OK;
    if (m->vdim == 0) { /* nothing stored with a vector yet: still embed once for the store */
        size_t len = strlen(text);
        float *v = malloc((size_t)m->emb.dim * sizeof *v);
        if (v == NULL)
            return cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        if ((rc = cairn__mem_embed(m, &text, &len, 1, v)) != CAIRN_OK) {
            free(v);
            return rc;
        }
        *vec = v;
        return CAIRN_OK;
    }
    if ((rc = cairn__mem_vec_query(m, text, NULL, &vq, &buf)) != CAIRN_OK)
        return rc;
    if (nsi >= 0 && (rc = cairn__mem_vec_search(m, (uint32_t)nsi, &vq, 1, 0, &h, &nh)) != CAIRN_OK) {
        free(buf);
        return cairn__mem_index_damaged(m, rc, "a vector index");
    }
    for (size_t i = 0; i < nh; i++) {
        ment *x = cairn__mem_find_seq(m, h.doc);
        if (x != NULL && x->live && !cairn__mem_expired(x, cairn__mem_wall_ms())) {
            *nov = 1 - h.score;
            strcpy(nearest, x->id);
        }
    }
    *vec = buf; /* its first dim floats are the raw vector */
    return CAIRN_OK;
}

int cairn_mem_remember(cairn_mem *m, const cairn_llm *llm, const char *messages, size_t len,
                       const cairn_remember_opts *o, cairn_remember_item **items,
                       size_t *n_items)
{
    cairn_remember_opts def = CAIRN_REMEMBER_OPTS_INIT;
    cairn__err e;
    char *prompt = NULL, *answer = NULL, err[CAIRN_ERRMSG_MAX] = "";
    rem_cand *c = NULL;
    cairn_remember_item *it = NULL;
    size_t nc = 0;
    double surprise;
    int rc;

    *items = NULL;
    *n_items = 0;
    if (o == NULL)
        o = &def;
    if ((rc = cairn__opts_version(m, "cairn_remember_opts", o->version, CAIRN_REMEMBER_OPTS_VERSION)) != CAIRN_OK)
        return rc;
    surprise = o->surprise == 0 ? REM_SURPRISE_DEFAULT : o->surprise;
    pthread_mutex_lock(&m->mu);
    cairn__errbuf(m)[0] = 0;
    pthread_mutex_unlock(&m->mu);
    if (llm == NULL || llm->complete == NULL) {
        pthread_mutex_lock(&m->mu);
        rc = cairn__mem_fail(m, CAIRN_EUNAVAIL, "LLM function required");
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    if (!(surprise >= 0 && surprise <= 1) || (o->importance >= 0 && o->importance > 1) ||
        (o->category != NULL && (o->category[0] == 0 || strlen(o->category) > MEM_CATEGORY_MAX))) {
        pthread_mutex_lock(&m->mu);
        rc = cairn__mem_fail(m, CAIRN_EINVAL, "surpriseThreshold and importance must be between "
                             "0 and 1, a category 1..%d bytes", MEM_CATEGORY_MAX);
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    rc = cairn__remember_prompt(messages, len, &prompt, &e);
    /* the LLM runs without the lock: it may take seconds */
    if (rc == CAIRN_OK && llm->complete(llm->user, prompt, &answer, err) != 0) {
        err[sizeof err - 1] = 0;
        rc = cairn__fail(&e, CAIRN_EIO, "LLM failed: %s", err[0] ? err : "no reason given");
    }
    if (rc == CAIRN_OK && answer == NULL)
        rc = cairn__fail(&e, CAIRN_EIO, "LLM failed: no answer");
    if (rc == CAIRN_OK)
        rc = cairn__remember_parse(answer, strlen(answer), &c, &nc, &e);
    free(prompt);
    free(answer);
    if (rc == CAIRN_OK && (it = calloc(nc ? nc : 1, sizeof *it)) == NULL)
        rc = cairn__fail(&e, CAIRN_ENOMEM, "no memory");
    if (rc != CAIRN_OK) {
        pthread_mutex_lock(&m->mu);
        (void)cairn__mem_fail(m, rc, "%s", e.msg);
        pthread_mutex_unlock(&m->mu);
        cairn__remember_free_cands(c, nc);
        return rc;
    }
    for (size_t i = 0; i < nc && rc == CAIRN_OK; i++) {
        cairn_remember_item *x = &it[i];
        cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
        cairn_memory *mem = NULL;
        const char *ns = o->ns ? o->ns : "";
        float *vec = NULL;
        int existed = 0;
        x->content = c[i].content;
        x->category = o->category ? dup_s(o->category) : c[i].category;
        if (o->category) {
            free(c[i].category);
            if (x->category == NULL)
                rc = CAIRN_ENOMEM;
        }
        c[i].content = c[i].category = NULL;
        x->importance = o->importance >= 0 ? o->importance : c[i].importance;
        if (rc != CAIRN_OK)
            break;
        pthread_mutex_lock(&m->mu);
        if (cairn__mem_find_dup(m, ns, x->content, strlen(x->content)) != NULL) {
            x->novelty = 0;
            strcpy(x->nearest, cairn__mem_find_dup(m, ns, x->content, strlen(x->content))->id);
            x->why = "already stored";
            pthread_mutex_unlock(&m->mu);
            continue;
        }
        rc = novelty(m, ns, x->content, &x->novelty, x->nearest, &vec);
        pthread_mutex_unlock(&m->mu);
        if (rc != CAIRN_OK)
            break;
        if (x->novelty < surprise) {
            x->why = "not novel enough";
            free(vec);
            continue;
        }
        if (o->dry_run) {
            x->why = "novel (dry run)";
            free(vec);
            continue;
        }
        so.ns = ns;
        so.category = x->category;
        so.importance = x->importance;
        so.vector = vec;
        rc = cairn_mem_store(m, x->content, &so, &mem, &existed);
        free(vec);
        if (rc == CAIRN_OK) {
            x->stored = !existed;
            strcpy(x->id, mem->id);
            x->why = existed ? "already stored" : "novel";
        }
        cairn_mem_free(mem);
    }
    cairn__remember_free_cands(c, nc);
    if (rc != CAIRN_OK && rc != CAIRN_ENOMEM) {
        cairn_remember_free(it, nc);
        return rc;
    }
    if (rc == CAIRN_ENOMEM) {
        cairn_remember_free(it, nc);
        pthread_mutex_lock(&m->mu);
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory");
        pthread_mutex_unlock(&m->mu);
        return rc;
    }
    *items = it;
    *n_items = nc;
    return CAIRN_OK;
}
