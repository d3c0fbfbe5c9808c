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
    cairn_db *db = NULL;
    char *text = NULL;
    cJSON *arr, *e;
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
    if (id == NULL || id[0] == 0)
        return cli_usage_error(ctx->cmd, "missing ID");
    if (cli_open_read(ctx, &db) != CAIRN_OK)
        return CLI_EXIT_FAIL;
    r = cairn_mem_history(db, id, &text);
    if (r == CAIRN_ENOTFOUND) {
        rc = cli_fail(ctx->cmd, r, "the log holds no record of %s", id);
    } else if (r != CAIRN_OK) {
        rc = cli_fail_db(ctx->cmd, db, r, "reading the log");
    } else if (json) {
        printf("%s\n", text);
        rc = CLI_EXIT_OK;
    } else if ((arr = cJSON_Parse(text)) == NULL) {
        rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "out of memory");
    } else {
        cJSON_ArrayForEach(e, arr) {
            const char *ts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "ts"));
            const char *ty = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "type"));
            uint16_t type = 0;
            char w[256];
            (void)cairn_record_type_parse(ty ? ty : "", &type);
            what(cJSON_GetObjectItemCaseSensitive(e, "payload"), type, id, w, sizeof w);
            printf("%.0f  %s  %-13s %s\n",
                   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "seq")), ts ? ts : "",
                   ty ? ty : "", w);
        }
        cJSON_Delete(arr);
        rc = CLI_EXIT_OK;
    }
    free(text);
    cairn_close(db);
    return rc;
}
