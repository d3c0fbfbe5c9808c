/*
 * cmd_history.c - `cairn history ID`: every record of the log that made or
 * changed one memory, oldest first, read from the log itself (an audit: the
 * memory index is not asked).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn.h"
#include "cli_json.h"
#include "cli_util.h"
#include "commands.h"

const char cmd_history_help[] =
    "usage: cairn history ID [--format text|json]\n"
    "\n"
    "Every record of the log that made or changed the memory ID, oldest first:\n"
    "its store (and a restore's new copy), updates, deletes, the access folds\n"
    "that counted it, the clears of its namespace after it was stored, a merge\n"
    "that took it in, and a purge. Read from the log itself, so a removed or\n"
    "forgotten memory has its history too, until compaction drops its records\n"
    "(format-spec/compaction.md); a compaction's holes are not listed here\n"
    "(`cairn dump` shows them). It reads every memory record of the log.\n"
    "\n"
    "Options:\n"
    "  --format F   text: \"seq  time  type  what\" lines; json: an array of\n"
    "               {seq, ts, type, ns, payload}, the payload as the log holds it\n"
    "\n"
    "Exit status: 0 success; 1 the log holds no record of ID, or an I/O error;\n"
    "64 usage error.\n";

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

/* What a record did to the memory, in a few words, for the text form. */
static void what(const cJSON *p, unsigned type, const char *id, char *out, size_t cap)
{
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(p, "ids");
    char *s;
    if (type == CAIRN_REC_MEMORY_ACCESS && cJSON_IsArray(ids)) {
        int i = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, ids) {
            if (cJSON_IsString(c) && strcmp(c->valuestring, id) == 0)
                break;
            i++;
        }
        c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(p, "counts"), i);
        snprintf(out, cap, "accessed %g time(s)", cJSON_IsNumber(c) ? c->valuedouble : 0.0);
        return;
    }
    s = cJSON_PrintUnformatted(p);
    snprintf(out, cap, "%.200s%s", s ? s : "", s && strlen(s) > 200 ? " ..." : "");
    free(s);
}

int cmd_history(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {NULL, 0}};
    const char *name, *val, *id = NULL;
    char *ns = NULL; /* the memory's namespace, once its store is seen */
    cairn_db *db = NULL;
    cairn_iter *it = NULL;
    cairn_record rec;
    cJSON *arr = NULL;
    size_t found = 0;
    cli_args a;
    int r, rc = -1, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_history_help);
        if (r == CLI_ARG_POS) {
            if (id != NULL)
                return cli_usage_error(ctx->cmd, "one ID only");
            id = val;
        } else {
            rc = cli_parse_format(ctx->cmd, val, &json);
        }
    }
    if (rc >= 0)
        return rc;
    if (id == NULL)
        return cli_usage_error(ctx->cmd, "missing ID");
    if (cli_open_read(ctx, &db) != CAIRN_OK)
        return CLI_EXIT_FAIL;
    if ((r = cairn_iter_open(db, NULL, &it)) != CAIRN_OK) {
        rc = cli_fail_db(ctx->cmd, db, r, "reading the log");
        cairn_close(db);
        return rc;
    }
    arr = json ? cJSON_CreateArray() : NULL;
    while ((r = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        cJSON *p;
        int mine;
        if (rec.type < CAIRN_REC_MEMORY || (rec.type > CAIRN_REC_MEMORY_CLEAR &&
                                            rec.type != CAIRN_REC_MEMORY_PURGE))
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
            if (cJSON_IsString(own) && strcmp(own->valuestring, id) == 0 &&
                (ns = malloc(rec.ns_len + 1)) != NULL) {
                memcpy(ns, rec.ns, rec.ns_len);
                ns[rec.ns_len] = 0;
            }
        }
        if (mine) {
            char t[40], w[256];
            found++;
            cli_format_time(rec.ts_ms, t, sizeof t);
            if (json) {
                cJSON *o = cJSON_CreateObject();
                char *nsz = malloc(rec.ns_len + 1);
                if (nsz != NULL) {
                    memcpy(nsz, rec.ns, rec.ns_len);
                    nsz[rec.ns_len] = 0;
                }
                cJSON_AddNumberToObject(o, "seq", (double)rec.seq);
                cJSON_AddStringToObject(o, "ts", t);
                cJSON_AddStringToObject(o, "type", cairn_record_type_name(rec.type));
                cJSON_AddStringToObject(o, "ns", nsz ? nsz : "");
                cJSON_AddItemToObject(o, "payload", p);
                p = NULL;
                cJSON_AddItemToArray(arr, o);
                free(nsz);
            } else {
                what(p, rec.type, id, w, sizeof w);
                printf("%llu  %s  %-13s %s\n", (unsigned long long)rec.seq, t,
                       cairn_record_type_name(rec.type), w);
            }
        }
        cJSON_Delete(p);
    }
    cairn_iter_close(it);
    if (r != CAIRN_ENOTFOUND) {
        rc = cli_fail_db(ctx->cmd, db, r, "reading the log");
    } else if (found == 0) {
        rc = cli_fail(ctx->cmd, CAIRN_ENOTFOUND, "the log holds no record of %s", id);
    } else {
        if (json) {
            char *s = cJSON_PrintUnformatted(arr);
            if (s != NULL)
                printf("%s\n", s);
            free(s);
        }
        rc = CLI_EXIT_OK;
    }
    cJSON_Delete(arr);
    free(ns);
    cairn_close(db);
    return rc;
}
