/*
 * history.c - cairn_mem_history: every record of the log that made or
 * changed one memory, read from the log itself (an audit: the memory index
 * is not asked, so a removed memory has its history too).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn.h"
#include "civil.h"

/* Does any string of o (at any depth) equal id? */
static int names(const cJSON *o, const char *id)
{
    const cJSON *c;
    if (cJSON_IsString(o))
        return strcmp(o->valuestring, id) == 0;
    cJSON_ArrayForEach(c, o)
        if (names(c, id))
            return 1;
    return 0;
}

static int is_memory_type(uint16_t t)
{
    return (t >= CAIRN_REC_MEMORY && t <= CAIRN_REC_MEMORY_CLEAR) || t == CAIRN_REC_MEMORY_PURGE;
}

/* One {seq, ts, type, ns, payload} entry; takes p. 0, or -1 out of memory. */
static int add_entry(cJSON *arr, const cairn_record *rec, cJSON *p)
{
    cJSON *o = cJSON_CreateObject();
    char t[40], num[24], *ns = malloc(rec->ns_len + 1);

    if (o == NULL || ns == NULL || !cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        cJSON_Delete(p);
        free(ns);
        return -1;
    }
    memcpy(ns, rec->ns, rec->ns_len);
    ns[rec->ns_len] = 0;
    cairn__iso_time(rec->ts_ms, t, sizeof t);
    snprintf(num, sizeof num, "%llu", (unsigned long long)rec->seq);
    cJSON_AddItemToObject(o, "seq", cJSON_CreateRaw(num)); /* exact past 2^53 */
    cJSON_AddStringToObject(o, "ts", t);
    cJSON_AddStringToObject(o, "type", cairn_record_type_name(rec->type));
    cJSON_AddStringToObject(o, "ns", ns);
    cJSON_AddItemToObject(o, "payload", p);
    free(ns);
    return 0;
}

int cairn_mem_history(cairn_db *db, const char *id, char **json_out)
{
    char *ns = NULL; /* the memory's namespace, once its store is seen */
    cairn_iter *it = NULL;
    cairn_record rec;
    cJSON *arr;
    int rc;

    if (json_out == NULL || db == NULL || id == NULL || id[0] == 0)
        return CAIRN_EINVAL;
    *json_out = NULL;
    if ((arr = cJSON_CreateArray()) == NULL)
        return CAIRN_ENOMEM;
    if ((rc = cairn_iter_open(db, NULL, &it)) != CAIRN_OK) {
        cJSON_Delete(arr);
        return rc;
    }
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        cJSON *p;
        int mine;
        if (!is_memory_type(rec.type))
            continue;
        if ((p = cJSON_ParseWithLength(rec.json, rec.json_len)) == NULL)
            continue; /* not a record the fold applies either (verify reports damage) */
        mine = names(p, id);
        if (rec.type == CAIRN_REC_MEMORY_CLEAR) { /* no id: all, or its namespace, after the store */
            const cJSON *cns = cJSON_GetObjectItemCaseSensitive(p, "namespace");
            mine = ns != NULL && (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "all")) ||
                                  (cJSON_IsString(cns) && strcmp(cns->valuestring, ns) == 0));
        }
        if (mine && rec.type == CAIRN_REC_MEMORY && ns == NULL) {
            const cJSON *own = cJSON_GetObjectItemCaseSensitive(p, "id");
            if (cJSON_IsString(own) && strcmp(own->valuestring, id) == 0) {
                if ((ns = malloc(rec.ns_len + 1)) == NULL) {
                    cJSON_Delete(p);
                    rc = CAIRN_ENOMEM;
                    break;
                }
                memcpy(ns, rec.ns, rec.ns_len);
                ns[rec.ns_len] = 0;
            }
        }
        if (!mine) {
            cJSON_Delete(p);
        } else if (add_entry(arr, &rec, p) != 0) {
            rc = CAIRN_ENOMEM;
            break;
        }
    }
    cairn_iter_close(it);
    free(ns);
    if (rc == CAIRN_ENOTFOUND)
        rc = cJSON_GetArraySize(arr) > 0 ? CAIRN_OK : CAIRN_ENOTFOUND;
    if (rc == CAIRN_OK && (*json_out = cJSON_PrintUnformatted(arr)) == NULL)
        rc = CAIRN_ENOMEM;
    cJSON_Delete(arr);
    return rc;
}
