/*
 * cmd_tiers.c - the cognitive tiers: `cairn stream add|list|search`,
 * `cairn core show|set|append|remove`, `cairn tiers stats|reflect` and
 * `cairn tokens`, over cairn_stream_*, cairn_core_*, cairn_reflection_add,
 * cairn_tiers_stats and cairn_tokens_estimate.
 *
 * --format json prints what the library returns (the design's field names);
 * text prints one line per entry or item. A failed call's JSON error
 * carries the design's MemoryError kind: INVALID_QUERY for a bad argument or
 * range, CYCLE_NOT_FOUND for a cycle range the stream does not reach,
 * PERMISSION_DENIED, DB_UNAVAILABLE; and "recoverable".
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_asof.h"
#include "cli_mem.h"
#include "cli_reflex.h"
#include "commands.h"

/* ---- help --------------------------------------------------------------------- */

#define SCOPE_HELP                                                                  \
    "  --scope S          global (default), org:NAME or repo:OWNER/NAME; a search\n"  \
    "                     or list in a repo also sees its org and global, one in\n"   \
    "                     an org also global (README \"Scopes\")\n"

const char cmd_stream_help[] =
    "usage: cairn stream add CONTENT --cycle N --role R [options]\n"
    "       cairn stream list --cycles A..B [--role R] [--min-importance N] [--limit N]\n"
    "       cairn stream search QUERY [--role R] [--issue N] [--min-importance N]\n"
    "                          [--cycles A..B] [--limit N]\n"
    "       (each also takes --scope S, --format text|json and --store DIR)\n"
    "\n"
    "The memory stream: what each role did in each cycle, with an importance of\n"
    "1-10, searchable as memories are (BM25, and vectors when the store has\n"
    "them). An entry whose importance takes the sum since the last reflection\n"
    "to 150 or past it makes a reflection due (`cairn tiers stats`).\n"
    "Run `cairn help stream SUBCOMMAND` for its options.\n"
    "\n"
    "Exit status: 0 success; 1 the operation failed (an invalid value or range,\n"
    "no cycle in the range, I/O error); 64 usage error.\n";

static const char stream_add_help[] =
    "usage: cairn stream add CONTENT --cycle N --role R [--action A]\n"
    "                        [--type action|observation|decision] [--importance N]\n"
    "                        [--tags a,b] [--issue N]... [--pr N]... [--scope S]\n"
    "                        [--format text|json]\n"
    "\n"
    "Add an entry to the memory stream (memoryLog).\n"
    "\n"
    "Options:\n"
    "  --cycle N          the cycle (0 or more; required)\n"
    "  --role R           the role that acted (required)\n"
    "  --action A         what it did, in a line (default: CONTENT's first line)\n"
    "  --type T           action (default), observation or decision\n"
    "  --importance N     1-10 (default 5)\n"
    "  --tags a,b         tags\n"
    "  --issue N          an issue it refers to; may be given again\n"
    "  --pr N             a pull request it refers to; may be given again\n"
    SCOPE_HELP
    "  --format F         text (default): \"added ID (cycle N, ROLE)\"; json:\n"
    "                     {entry, existed, reflection: {importanceSinceReflection,\n"
    "                     threshold, due}}\n"
    "\n"
    "A reflection that becomes due is also said on stderr.\n"
    "\n"
    "Exit status: 0 added; 1 an invalid value (INVALID_QUERY), I/O error; 64\n"
    "usage error.\n";

static const char stream_list_help[] =
    "usage: cairn stream list --cycles A..B [--role R] [--min-importance N]\n"
    "                         [--limit N] [--scope S] [--only-scope]\n"
    "                         [--format text|json]\n"
    "\n"
    "Every entry of cycles A to B (recallByCycle), by cycle, then time. Opens\n"
    "the store read-only.\n"
    "\n"
    "Options:\n"
    "  --cycles A..B      the cycles (required; A <= B; N alone is N..N)\n"
    "  --role R           only this role's entries\n"
    "  --min-importance N only entries of importance N (1-10) or more\n"
    "  --limit N          the first N (default: all)\n"
    SCOPE_HELP
    "  --only-scope       the scope alone, not the wider ones\n"
    "  --format F         text (default): \"C<cycle>  ROLE  TYPE  IMPORTANCE\n"
    "                     CONTENT  (ID)\" lines; json: an array of entries\n"
    AS_OF_HELP
    "\n"
    "Exit status: 0 success (also when the filters leave none); 1 an inverted or\n"
    "malformed range (INVALID_QUERY), a range holding no cycle of the stream\n"
    "(CYCLE_NOT_FOUND; the message says which cycles it holds); 64 usage error.\n";

static const char stream_search_help[] =
    "usage: cairn stream search QUERY [--role R] [--issue N] [--min-importance N]\n"
    "                               [--cycles A..B] [--limit N] [--scope S]\n"
    "                               [--only-scope] [--format text|json]\n"
    "\n"
    "The entries that best match QUERY (recallSearch), ranked as `cairn recall`\n"
    "ranks memories: relevance, importance, recency (README \"Recall\"); each\n"
    "found entry's access is recorded. Opens the store read-only.\n"
    "\n"
    "Options:\n"
    "  --role R           only this role's entries\n"
    "  --issue N          only entries that refer to issue N\n"
    "  --min-importance N only entries of importance N (1-10) or more\n"
    "  --cycles A..B      only these cycles\n"
    "  --limit N          how many (default 5)\n"
    SCOPE_HELP
    "  --only-scope       the scope alone, not the wider ones\n"
    "  --format F         text (default): lines as `stream list`, the score\n"
    "                     first; json: an array of entries with \"score\"\n"
    "\n"
    "Exit status: 0 success (also when nothing matches); 1 an invalid filter or\n"
    "range (INVALID_QUERY), I/O error; 64 usage error.\n";

const char cmd_core_help[] =
    "usage: cairn core show [SECTION] [--scope S] [--format text|json]\n"
    "       cairn core set SECTION VALUE [--role R] [--scope S] [--format text|json]\n"
    "       cairn core append SECTION VALUE [--scope S] [--format text|json]\n"
    "       cairn core remove SECTION ITEM-ID [--scope S] [--format text|json]\n"
    "\n"
    "Core memory: the sections kept in every prompt. sprint and roleState (one\n"
    "value per role, --role) are replaced whole by set; threads, recentlyShipped\n"
    "(the last 10 kept: an append past them removes the oldest, and says so),\n"
    "blockers and lessons take items by append and lose them by remove (an\n"
    "item removed can be brought back with `cairn restore ID`). A VALUE is JSON\n"
    "or plain text. A section holds at most 2,000 tokens, the core 8,000\n"
    "(`cairn tokens`): a change past either is refused. Every change is a\n"
    "record of the log. show opens the store read-only.\n"
    "\n"
    "Options:\n"
    SCOPE_HELP
    "  --role R           the role whose roleState set replaces\n"
    "  --format F         text (default) or json (the sections, items with id,\n"
    "                     value, tokens, added; and the token use)\n"
    "\n"
    "Exit status: 0 success; 1 an unknown section, a budget passed, no such item,\n"
    "I/O error; 64 usage error.\n";

const char cmd_tiers_help[] =
    "usage: cairn tiers stats [--scope S] [--format text|json]\n"
    "       cairn tiers reflect TEXT --cycle N [--role R] [--outcome O]\n"
    "                           [--what-worked W] [--scope S] [--format text|json]\n"
    "\n"
    "  stats    the tiers' statistics (memoryStats): stream entries, oldest and\n"
    "           newest cycle, tokens; archival entries; core token use, threads\n"
    "           and blockers; the last reflection, the importance logged since\n"
    "           and whether a reflection is due (at 150). Read-only.\n"
    "  reflect  record a reflection (what was learned in cycle N): the\n"
    "           importance since the last reflection starts again at 0.\n"
    "\n"
    "Options:\n"
    SCOPE_HELP
    "  --cycle N, --role R, --outcome O, --what-worked W   the reflection's\n"
    "  --format F         text (default: \"key: value\" lines) or json\n"
    "\n"
    "Exit status: 0 success; 1 an invalid value, I/O error; 64 usage error.\n";

const char cmd_tokens_help[] =
    "usage: cairn tokens TEXT|- [--format text|json]\n"
    "\n"
    "The token estimate of TEXT (- reads standard input): its characters (code\n"
    "points) divided by 4, rounded up, the rule every tier uses for budgets and\n"
    "tokenEstimate. An estimate for budgets, not a tokenizer's count.\n"
    "\n"
    "Options:\n"
    "  --format F   text (default): the number; json: {tokens, characters, bytes,\n"
    "               rule}\n"
    "\n"
    "Exit status: 0 success; 1 TEXT is not valid UTF-8 or cannot be read; 64\n"
    "usage error.\n";

/* ---- shared -------------------------------------------------------------------- */

static int tier_fail(cli_ctx *ctx, cairn_mem *mem, int rc, int cycles)
{
    const char *msg = cairn_mem_errmsg(mem);
    if (msg == NULL || msg[0] == 0)
        msg = cairn_strerror(rc);
    if (cycles && rc == CAIRN_ENOTFOUND)
        return cli_fail_kind(ctx->cmd, rc, "CYCLE_NOT_FOUND", "%s", msg);
    return cli_fail(ctx->cmd, rc, "%s", msg);
}

/* "A..B" or "N" into *a, *b. -1 when parsed, else the error's exit code. */
static int parse_cycles(cli_ctx *ctx, const char *v, int64_t *a, int64_t *b)
{
    const char *dots = strstr(v, "..");
    uint64_t x, y;
    char first[32];
    if (dots == NULL) {
        if (cli_parse_u64(v, 9007199254740992ull, &x) != 0)
            goto bad;
        *a = *b = (int64_t)x;
        return -1;
    }
    if ((size_t)(dots - v) >= sizeof first)
        goto bad;
    memcpy(first, v, (size_t)(dots - v));
    first[dots - v] = 0;
    if (cli_parse_u64(first, 9007199254740992ull, &x) != 0 ||
        cli_parse_u64(dots + 2, 9007199254740992ull, &y) != 0)
        goto bad;
    *a = (int64_t)x;
    *b = (int64_t)y;
    return -1;
bad:
    return cli_fail(ctx->cmd, CAIRN_EQUERY, "--cycles: A..B (two cycles, 0 or more) or N, not '%s'", v);
}

/* --tags a,b into o's "tags" (the empty ones left out). */
static void set_tags(cJSON *o, const char *val)
{
    cJSON *t = cJSON_CreateArray();
    char *copy = strdup(val), *save = NULL, *tok;
    for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save))
        if (*tok)
            cJSON_AddItemToArray(t, cJSON_CreateString(tok));
    free(copy);
    cJSON_DeleteItemFromObjectCaseSensitive(o, "tags");
    cJSON_AddItemToObject(o, "tags", t);
}

static void print_compact(const char *json)
{
    printf("%s\n", json);
}

/* One entry as a text line. */
static void entry_line(const cJSON *e, int with_score)
{
    const char *c = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "content"));
    int w = c ? (int)strcspn(c, "\r\n") : 0;
    if (with_score)
        printf("%.4f  ", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "score")));
    printf("C%lld  %s  %s  %d  %.*s%s  (%s)\n",
           (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "cycle")),
           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "role")),
           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "type")),
           (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "importance")),
           w > 100 ? 100 : w, c ? c : "", w > 100 ? " ..." : "",
           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "id")));
}

static void entries_text(const char *json, int with_score)
{
    cJSON *arr = cJSON_Parse(json), *e;
    cJSON_ArrayForEach(e, arr)
        entry_line(e, with_score);
    cJSON_Delete(arr);
}

/* The options every tier subcommand takes: --scope, --format, --help, a
 * usage error. Returns 1 when it took x (with *rc set). */
static int tier_arg(cli_ctx *ctx, int x, const char *name, const char *val, const char *help,
                    const char **scope, int *json, int *rc)
{
    if (x == CLI_ARG_ERR) {
        *rc = CLI_EXIT_USAGE;
        return 1;
    }
    if (x == CLI_ARG_HELP) {
        *rc = cli_help(help);
        return 1;
    }
    if (x == CLI_ARG_OPT && strcmp(name, "scope") == 0) {
        *scope = val;
        return 1;
    }
    if (x == CLI_ARG_OPT && strcmp(name, "format") == 0) {
        *rc = cli_parse_format(ctx->cmd, val, json);
        return 1;
    }
    return 0;
}

/* ---- stream ---------------------------------------------------------------------- */

static int stream_add(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"cycle", 1}, {"role", 1},  {"action", 1}, {"type", 1},
                                       {"importance", 1}, {"tags", 1}, {"issue", 1},
                                       {"pr", 1},    {"scope", 1}, {"format", 1}, {NULL, 0}};
    const char *name, *val, *scope = NULL, *content = NULL;
    cJSON *e = cJSON_CreateObject(), *issues = cJSON_CreateArray(), *prs = cJSON_CreateArray();
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    char *in = NULL, *out = NULL;
    uint64_t u;
    cli_args a;
    int rc = -1, x, json = 0, have_cycle = 0, have_role = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (tier_arg(ctx, x, name, val, stream_add_help, &scope, &json, &rc))
            continue;
        if (x == CLI_ARG_POS) {
            if (content != NULL)
                rc = cli_usage_error(ctx->cmd, "one CONTENT only (quote it)");
            content = val;
        } else if (strcmp(name, "cycle") == 0) {
            if ((rc = cli_opt_uint(ctx->cmd, name, val, 0, 9007199254740992ull, &u)) < 0)
                cJSON_AddNumberToObject(e, "cycle", (double)u), have_cycle = 1;
        } else if (strcmp(name, "importance") == 0) {
            if ((rc = cli_opt_uint(ctx->cmd, name, val, 1, 10, &u)) < 0)
                cJSON_AddNumberToObject(e, "importance", (double)u);
        } else if (strcmp(name, "issue") == 0 || strcmp(name, "pr") == 0) {
            if ((rc = cli_opt_uint(ctx->cmd, name, val, 1, 9007199254740992ull, &u)) < 0)
                cJSON_AddItemToArray(name[0] == 'i' ? issues : prs, cJSON_CreateNumber((double)u));
        } else if (strcmp(name, "tags") == 0) {
            set_tags(e, val);
        } else { /* role, action, type */
            have_role |= strcmp(name, "role") == 0;
            cJSON_DeleteItemFromObjectCaseSensitive(e, name);
            cJSON_AddStringToObject(e, name, val);
        }
    }
    if (rc < 0 && content == NULL)
        rc = cli_usage_error(ctx->cmd, "missing CONTENT");
    if (rc < 0 && !have_cycle)
        rc = cli_opt_missing(ctx->cmd, "cycle");
    if (rc < 0 && !have_role)
        rc = cli_opt_missing(ctx->cmd, "role");
    if (rc < 0) {
        cJSON_AddStringToObject(e, "content", content);
        cJSON_AddItemToObject(e, "issueRefs", issues);
        cJSON_AddItemToObject(e, "prRefs", prs);
        issues = prs = NULL;
        in = cJSON_PrintUnformatted(e);
    }
    cJSON_Delete(e);
    cJSON_Delete(issues);
    cJSON_Delete(prs);
    if (rc >= 0) {
        free(in);
        return rc;
    }
    if ((rc = cli_mem_open(ctx, 1, &db, &mem)) != CLI_EXIT_OK) {
        free(in);
        return rc;
    }
    x = in ? cairn_stream_add(mem, scope, in, &out) : CAIRN_ENOMEM;
    free(in);
    if (x != CAIRN_OK)
        return cli_mem_close(ctx, db, mem, tier_fail(ctx, mem, x, 0));
    {
        cJSON *o = cJSON_Parse(out), *ent = cJSON_GetObjectItemCaseSensitive(o, "entry"),
              *r = cJSON_GetObjectItemCaseSensitive(o, "reflection");
        if (json)
            print_compact(out);
        else
            printf("%s %s (cycle %lld, %s)\n",
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "existed")) ? "exists:" : "added",
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ent, "id")),
                   (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ent, "cycle")),
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ent, "role")));
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "due")))
            fprintf(stderr, "cairn: %s: a reflection is due: importance %lld since the last one "
                    "(threshold %lld; record one with `cairn tiers reflect`)\n", ctx->cmd,
                    (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "importanceSinceReflection")),
                    (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "threshold")));
        cJSON_Delete(o);
    }
    cairn_free(out);
    return cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
}

/* list (search = 0) and search (1) */
static int stream_query(cli_ctx *ctx, int argc, char **argv, int search)
{
    static const cli_optspec spec[] = {{"cycles", 1}, {"role", 1},  {"issue", 1},
                                       {"min-importance", 1}, {"limit", 1}, {"scope", 1},
                                       {"only-scope", 0}, {"format", 1}, {NULL, 0}};
    cairn_stream_query q = CAIRN_STREAM_QUERY_INIT;
    const char *name, *val, *query = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    char *out = NULL;
    uint64_t u;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (tier_arg(ctx, x, name, val, search ? stream_search_help : stream_list_help, &q.scope,
                     &json, &rc))
            continue;
        if (x == CLI_ARG_POS) {
            if (!search || query != NULL)
                rc = cli_usage_error(ctx->cmd, search ? "one QUERY only (quote it)"
                                                      : "unexpected argument '%s'", val);
            query = val;
        } else if (strcmp(name, "cycles") == 0) {
            rc = parse_cycles(ctx, val, &q.cycle_from, &q.cycle_to);
            q.has_cycles = 1;
        } else if (strcmp(name, "role") == 0) {
            rc = cli_opt_nonempty(ctx->cmd, name, q.role = val);
        } else if (strcmp(name, "issue") == 0) {
            if ((rc = cli_opt_uint(ctx->cmd, name, val, 1, 9007199254740992ull, &u)) < 0)
                q.issue = (int64_t)u;
        } else if (strcmp(name, "min-importance") == 0) {
            if ((rc = cli_opt_uint(ctx->cmd, name, val, 1, 10, &u)) < 0)
                q.min_importance = (int)u;
        } else if (strcmp(name, "limit") == 0) {
            if ((rc = cli_opt_uint(ctx->cmd, name, val, 1, 100000, &u)) < 0)
                q.limit = (size_t)u;
        } else if (strcmp(name, "only-scope") == 0) {
            q.only_scope = 1;
        }
    }
    if (rc < 0 && search && query == NULL)
        rc = cli_usage_error(ctx->cmd, "missing QUERY");
    if (rc < 0 && !search && !q.has_cycles)
        rc = cli_fail(ctx->cmd, CAIRN_EQUERY, "--cycles A..B is required");
    if (rc >= 0)
        return rc;
    if ((rc = cli_mem_open(ctx, 0, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    x = search ? cairn_stream_search(mem, query, &q, &out) : cairn_stream_list(mem, &q, &out);
    if (x != CAIRN_OK)
        return cli_mem_close(ctx, db, mem, tier_fail(ctx, mem, x, !search));
    if (json)
        print_compact(out);
    else
        entries_text(out, search);
    cairn_free(out);
    return cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
}

static int stream_list(cli_ctx *ctx, int argc, char **argv)
{
    return stream_query(ctx, argc, argv, 0);
}

static int stream_search(cli_ctx *ctx, int argc, char **argv)
{
    return stream_query(ctx, argc, argv, 1);
}

int cmd_stream(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_subcmd subs[] = {
        {"add", "stream add", stream_add_help, stream_add},
        {"list", "stream list", stream_list_help, stream_list},
        {"search", "stream search", stream_search_help, stream_search},
        {NULL, NULL, NULL, NULL}};
    return cli_subcommand(ctx, cmd_stream_help, subs, argc, argv);
}

/* ---- core -------------------------------------------------------------------------- */

static void value_text(const cJSON *v)
{
    char *s;
    if (cJSON_IsString(v)) {
        printf("%s", v->valuestring);
        return;
    }
    s = cJSON_PrintUnformatted(v);
    printf("%s", s ? s : "");
    free(s);
}

static void items_text(const cJSON *items)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, items) {
        printf("- ");
        value_text(cJSON_GetObjectItemCaseSensitive(it, "value"));
        printf("  (%s)\n", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "id")));
    }
}

static void section_text(const char *name, const cJSON *v)
{
    printf("## %s\n", name);
    if (cJSON_IsArray(v)) {
        items_text(v);
    } else if (strcmp(name, "roleState") == 0) {
        const cJSON *r;
        cJSON_ArrayForEach(r, v) {
            printf("%s: ", r->string);
            value_text(r);
            printf("\n");
        }
    } else if (!cJSON_IsNull(v)) {
        value_text(v);
        printf("\n");
    }
}

/* One core subcommand: the positional arguments it wants (1..3 of
 * SECTION, VALUE or ITEM-ID; show: 0..1). */
static int core_run(cli_ctx *ctx, int argc, char **argv, const char *help, int op)
{
    static const cli_optspec spec[] = {{"scope", 1}, {"role", 1}, {"format", 1}, {NULL, 0}};
    static const int want_min[] = {0, 2, 2, 2}, want_max[] = {1, 2, 2, 2};
    const char *name, *val, *scope = NULL, *role = NULL, *pos[3] = {NULL, NULL, NULL};
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    char *out = NULL;
    cli_args a;
    int rc = -1, x, json = 0, npos = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (tier_arg(ctx, x, name, val, help, &scope, &json, &rc))
            continue;
        if (x == CLI_ARG_POS) {
            if (npos == want_max[op])
                rc = cli_usage_error(ctx->cmd, "unexpected argument '%s' (quote a VALUE)", val);
            else
                pos[npos++] = val;
        } else if (strcmp(name, "role") == 0) {
            if (op != 1)
                rc = cli_usage_error(ctx->cmd, "--role belongs to `core set roleState`");
            role = val;
        }
    }
    if (rc < 0 && npos < want_min[op])
        rc = cli_usage_error(ctx->cmd, "missing %s", npos == 0 ? "SECTION" : op == 3 ? "ITEM-ID" : "VALUE");
    if (rc >= 0)
        return rc;
    if ((rc = cli_mem_open(ctx, op != 0, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    switch (op) {
    case 0: x = cairn_core_show(mem, scope, pos[0], &out); break;
    case 1: x = cairn_core_set(mem, scope, pos[0], role, pos[1], &out); break;
    case 2: x = cairn_core_append(mem, scope, pos[0], pos[1], &out); break;
    default: x = cairn_core_remove(mem, scope, pos[0], pos[1], &out); break;
    }
    if (x != CAIRN_OK)
        return cli_mem_close(ctx, db, mem, tier_fail(ctx, mem, x, 0));
    if (json) {
        print_compact(out);
    } else {
        cJSON *o = cJSON_Parse(out);
        if (op == 0 && pos[0] == NULL) {
            const cJSON *s, *t = cJSON_GetObjectItemCaseSensitive(o, "tokens");
            cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(o, "sections"))
                section_text(s->string, s);
            printf("tokens: %lld of %lld\n",
                   (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "total")),
                   (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "budget")));
        } else if (op == 0) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "items");
            section_text(pos[0], v ? v : cJSON_GetObjectItemCaseSensitive(o, "value"));
            printf("tokens: %lld of %lld\n",
                   (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "tokens")),
                   (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "budget")));
        } else if (op == 1) {
            printf("%s %s%s%s (%s)\n",
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "changed")) ? "set" : "unchanged:",
                   pos[0], role ? " of " : "", role ? role : "",
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "id")));
        } else if (op == 2) {
            const cJSON *r;
            printf("%s %s to %s\n",
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "existed")) ? "exists:" : "appended",
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                       cJSON_GetObjectItemCaseSensitive(o, "item"), "id")),
                   pos[0]);
            cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(o, "removed"))
                printf("removed %s from %s (it keeps the last %d)\n", r->valuestring, pos[0],
                       CAIRN_CORE_SHIPPED_MAX);
        } else {
            printf("removed %s from %s\n", pos[1], pos[0]);
        }
        cJSON_Delete(o);
    }
    cairn_free(out);
    return cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
}

static const char core_show_help[] =
    "usage: cairn core show [SECTION] [--scope S] [--format text|json]\n"
    "\n"
    "The core memory of the scope, or one SECTION of it (sprint, roleState,\n"
    "threads, recentlyShipped, blockers, lessons), with its token use. Opens the\n"
    "store read-only.\n"
    "\n"
    "Options:\n"
    AS_OF_HELP
    "\n"
    "Exit status: 0 success; 1 an unknown section, I/O error; 64 usage error.\n";
static const char core_set_help[] =
    "usage: cairn core set SECTION VALUE [--role R] [--scope S] [--format text|json]\n"
    "\n"
    "Replace sprint, or the roleState of role R, with VALUE (JSON or text).\n"
    "\n"
    "Exit status: 0 set (or unchanged); 1 not an updatable section, --role\n"
    "missing, a budget passed, I/O error; 64 usage error.\n";
static const char core_append_help[] =
    "usage: cairn core append SECTION VALUE [--scope S] [--format text|json]\n"
    "\n"
    "Append VALUE (JSON or text) to threads, recentlyShipped, blockers or lessons\n"
    "and print its item id. The same VALUE in the section already is not added\n"
    "again. recentlyShipped keeps the last 10: what an append removes is printed.\n"
    "\n"
    "Exit status: 0 appended (or there already); 1 not an appendable section, a\n"
    "budget passed, I/O error; 64 usage error.\n";
static const char core_remove_help[] =
    "usage: cairn core remove SECTION ITEM-ID [--scope S] [--format text|json]\n"
    "\n"
    "Remove an item of an appendable section (`cairn restore ITEM-ID` brings it\n"
    "back).\n"
    "\n"
    "Exit status: 0 removed; 1 no such item in the section, I/O error; 64 usage\n"
    "error.\n";

static int core_show(cli_ctx *ctx, int argc, char **argv)
{
    return core_run(ctx, argc, argv, core_show_help, 0);
}
static int core_set(cli_ctx *ctx, int argc, char **argv)
{
    return core_run(ctx, argc, argv, core_set_help, 1);
}
static int core_append(cli_ctx *ctx, int argc, char **argv)
{
    return core_run(ctx, argc, argv, core_append_help, 2);
}
static int core_remove(cli_ctx *ctx, int argc, char **argv)
{
    return core_run(ctx, argc, argv, core_remove_help, 3);
}

int cmd_core(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_subcmd subs[] = {
        {"show", "core show", core_show_help, core_show},
        {"set", "core set", core_set_help, core_set},
        {"append", "core append", core_append_help, core_append},
        {"remove", "core remove", core_remove_help, core_remove},
        {NULL, NULL, NULL, NULL}};
    return cli_subcommand(ctx, cmd_core_help, subs, argc, argv);
}

/* ---- tiers stats, reflect ---------------------------------------------------------- */

static void kv_text(const cJSON *o, const char *prefix)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, o) {
        char key[128];
        snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "." : "", v->string);
        if (cJSON_IsObject(v)) {
            kv_text(v, key);
            continue;
        }
        printf("%s: ", key);
        if (cJSON_IsNull(v))
            printf("none");
        else
            value_text(v);
        printf("\n");
    }
}

static int tiers_stats(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"scope", 1}, {"format", 1}, {NULL, 0}};
    const char *name, *val, *scope = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    char *out = NULL;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END)
        if (!tier_arg(ctx, x, name, val, cmd_tiers_help, &scope, &json, &rc))
            rc = cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
    if (rc >= 0)
        return rc;
    if ((rc = cli_mem_open(ctx, 0, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    if ((x = cairn_tiers_stats(mem, scope, &out)) != CAIRN_OK)
        return cli_mem_close(ctx, db, mem, tier_fail(ctx, mem, x, 0));
    if (json) {
        print_compact(out);
    } else {
        cJSON *o = cJSON_Parse(out);
        kv_text(o, "");
        cJSON_Delete(o);
    }
    cairn_free(out);
    return cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
}

static int tiers_reflect(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"cycle", 1}, {"role", 1}, {"outcome", 1},
                                       {"what-worked", 1}, {"scope", 1}, {"format", 1},
                                       {NULL, 0}};
    const char *name, *val, *scope = NULL, *text = NULL;
    cJSON *r = cJSON_CreateObject();
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    char *in = NULL, *out = NULL;
    uint64_t u;
    cli_args a;
    int rc = -1, x, json = 0, have_cycle = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (tier_arg(ctx, x, name, val, cmd_tiers_help, &scope, &json, &rc))
            continue;
        if (x == CLI_ARG_POS) {
            if (text != NULL)
                rc = cli_usage_error(ctx->cmd, "one TEXT only (quote it)");
            text = val;
        } else if (strcmp(name, "cycle") == 0) {
            if ((rc = cli_opt_uint(ctx->cmd, name, val, 0, 9007199254740992ull, &u)) < 0)
                cJSON_AddNumberToObject(r, "cycle", (double)u), have_cycle = 1;
        } else {
            cJSON_DeleteItemFromObjectCaseSensitive(r, strcmp(name, "what-worked") == 0 ? "whatWorked" : name);
            cJSON_AddStringToObject(r, strcmp(name, "what-worked") == 0 ? "whatWorked" : name, val);
        }
    }
    if (rc < 0 && text == NULL)
        rc = cli_usage_error(ctx->cmd, "missing TEXT");
    if (rc < 0 && !have_cycle)
        rc = cli_opt_missing(ctx->cmd, "cycle");
    if (rc < 0) {
        cJSON_AddStringToObject(r, "content", text);
        in = cJSON_PrintUnformatted(r);
    }
    cJSON_Delete(r);
    if (rc >= 0 || (rc = cli_mem_open(ctx, 1, &db, &mem)) != CLI_EXIT_OK) {
        free(in);
        return rc;
    }
    x = in ? cairn_reflection_add(mem, scope, in, &out) : CAIRN_ENOMEM;
    free(in);
    if (x != CAIRN_OK)
        return cli_mem_close(ctx, db, mem, tier_fail(ctx, mem, x, 0));
    if (json) {
        print_compact(out);
    } else {
        cJSON *o = cJSON_Parse(out);
        printf("recorded reflection %s (cycle %lld)\n",
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                   cJSON_GetObjectItemCaseSensitive(o, "reflection"), "id")),
               (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
                   cJSON_GetObjectItemCaseSensitive(o, "reflection"), "cycle")));
        cJSON_Delete(o);
    }
    cairn_free(out);
    return cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
}

int cmd_tiers(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_subcmd subs[] = {
        {"stats", "tiers stats", cmd_tiers_help, tiers_stats},
        {"reflect", "tiers reflect", cmd_tiers_help, tiers_reflect},
        {NULL, NULL, NULL, NULL}};
    return cli_subcommand(ctx, cmd_tiers_help, subs, argc, argv);
}

/* ---- archival ------------------------------------------------------------------------ */

const char cmd_archival_help[] =
    "usage: cairn archival insert TEXT [--type T] [--source S] [--date D] [--tags a,b]\n"
    "                              [--id ID] [--later] [--scope S] [--format text|json]\n"
    "       cairn archival search QUERY [--type T] [--since D] [--until D] [--limit N]\n"
    "                              [--scope S] [--only-scope] [--format text|json]\n"
    "       cairn archival index [--scope S]\n"
    "\n"
    "Archival memory: documents (specs, retros, decisions) kept for later search,\n"
    "by words and, with an embedder (--embed-builtin, --embed-cmd, or the one the\n"
    "store's vectors name), by meaning.\n"
    "  insert  store TEXT. It is embedded before it is stored; with --later it is\n"
    "          stored and printed at once and embedded before the command exits\n"
    "          (a library handle embeds on a thread of its own while the caller\n"
    "          goes on). An entry of an --id there already is not added again.\n"
    "  search  the entries that best match QUERY (archivalSearch), ranked as\n"
    "          `cairn recall` ranks memories; --type, and --since/--until on the\n"
    "          entry's date (YYYY-MM-DD or ISO 8601); --limit N (default 5).\n"
    "          Read-only.\n"
    "  index   embed every entry stored without a vector (one stored with no\n"
    "          embedder at hand, or whose embedding did not finish).\n"
    "\n"
    "Options:\n"
    "  --type T      what it is (default: document)\n"
    "  --source S    where it comes from (a path, a URL)\n"
    "  --date D      its date: YYYY-MM-DD or an ISO 8601 UTC time\n"
    "  --tags a,b    tags\n"
    SCOPE_HELP
    "  --only-scope  search the scope alone, not the wider ones\n"
    "  --format F    text (default) or json (the entry, or an array with \"score\")\n"
    "\n"
    "Exit status: 0 success; 1 an invalid value (INVALID_QUERY), no embedder for\n"
    "index, I/O error; 64 usage error.\n";

static int archival_insert(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"type", 1}, {"source", 1}, {"date", 1}, {"tags", 1},
                                       {"id", 1},   {"later", 0},  {"scope", 1}, {"format", 1},
                                       {NULL, 0}};
    const char *name, *val, *scope = NULL, *text = NULL;
    cJSON *meta = cJSON_CreateObject();
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    char *in = NULL, *out = NULL;
    unsigned flags = CAIRN_ARCHIVAL_WAIT;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (tier_arg(ctx, x, name, val, cmd_archival_help, &scope, &json, &rc))
            continue;
        if (x == CLI_ARG_POS) {
            if (text != NULL)
                rc = cli_usage_error(ctx->cmd, "one TEXT only (quote it)");
            text = val;
        } else if (strcmp(name, "later") == 0) {
            flags = 0;
        } else if (strcmp(name, "tags") == 0) {
            set_tags(meta, val);
        } else {
            cJSON_DeleteItemFromObjectCaseSensitive(meta, name);
            cJSON_AddStringToObject(meta, name, val);
        }
    }
    if (rc < 0 && text == NULL)
        rc = cli_usage_error(ctx->cmd, "missing TEXT");
    if (rc < 0)
        in = cJSON_PrintUnformatted(meta);
    cJSON_Delete(meta);
    if (rc >= 0 || (rc = cli_mem_open(ctx, 1, &db, &mem)) != CLI_EXIT_OK) {
        free(in);
        return rc;
    }
    x = in ? cairn_archival_insert(mem, scope, text, in, flags, &out) : CAIRN_ENOMEM;
    free(in);
    if (x != CAIRN_OK)
        return cli_mem_close(ctx, db, mem, tier_fail(ctx, mem, x, 0));
    if (json) {
        print_compact(out);
    } else {
        cJSON *o = cJSON_Parse(out), *e = cJSON_GetObjectItemCaseSensitive(o, "entry");
        printf("%s %s (%s)\n",
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "existed")) ? "exists:" : "inserted",
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "id")),
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "indexed")) ? "embedded"
               : cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "queued")) ? "embedding before exit"
                                                                               : "no embedder: found by its words");
        cJSON_Delete(o);
    }
    fflush(stdout);
    cairn_free(out);
    x = cairn_archival_wait(mem);
    return cli_mem_close(ctx, db, mem, x == CAIRN_OK ? CLI_EXIT_OK : tier_fail(ctx, mem, x, 0));
}

static int archival_search(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"type", 1},  {"since", 1}, {"until", 1}, {"limit", 1},
                                       {"scope", 1}, {"only-scope", 0}, {"format", 1}, {NULL, 0}};
    cairn_archival_query q = CAIRN_ARCHIVAL_QUERY_INIT;
    const char *name, *val, *query = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    char *out = NULL;
    uint64_t u;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (tier_arg(ctx, x, name, val, cmd_archival_help, &q.scope, &json, &rc))
            continue;
        if (x == CLI_ARG_POS) {
            if (query != NULL)
                rc = cli_usage_error(ctx->cmd, "one QUERY only (quote it)");
            query = val;
        } else if (strcmp(name, "type") == 0) {
            rc = cli_opt_nonempty(ctx->cmd, name, q.type = val);
        } else if (strcmp(name, "since") == 0 || strcmp(name, "until") == 0) {
            char buf[40];
            int64_t ms = 0;
            snprintf(buf, sizeof buf, strlen(val) == 10 ? "%sT00:00:00Z" : "%s", val);
            if (cli_parse_time(buf, cli_now_ms(), &ms) != 0)
                rc = cli_fail(ctx->cmd, CAIRN_EQUERY, "--%s: YYYY-MM-DD or ISO 8601, not '%s'", name, val);
            else if (name[0] == 's')
                q.since = ms;
            else
                q.until = ms;
        } else if (strcmp(name, "limit") == 0) {
            if ((rc = cli_opt_uint(ctx->cmd, name, val, 1, 1000, &u)) < 0)
                q.limit = (size_t)u;
        } else if (strcmp(name, "only-scope") == 0) {
            q.only_scope = 1;
        }
    }
    if (rc < 0 && query == NULL)
        rc = cli_usage_error(ctx->cmd, "missing QUERY");
    if (rc >= 0 || (rc = cli_mem_open(ctx, 0, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    if ((x = cairn_archival_search(mem, query, &q, &out)) != CAIRN_OK)
        return cli_mem_close(ctx, db, mem, tier_fail(ctx, mem, x, 0));
    if (json) {
        print_compact(out);
    } else {
        cJSON *arr = cJSON_Parse(out), *e;
        cJSON_ArrayForEach(e, arr) {
            const char *c = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "content"));
            const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "date"));
            int w = c ? (int)strcspn(c, "\r\n") : 0;
            printf("%.4f  [%s] %s%s%.*s%s  (%s)\n",
                   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "score")),
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "type")), d ? d : "",
                   d ? "  " : "", w > 100 ? 100 : w, c ? c : "", w > 100 ? " ..." : "",
                   cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "id")));
        }
        cJSON_Delete(arr);
    }
    cairn_free(out);
    return cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
}

static int archival_index(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"scope", 1}, {"format", 1}, {NULL, 0}};
    const char *name, *val, *scope = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    uint64_t n = 0;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END)
        if (!tier_arg(ctx, x, name, val, cmd_archival_help, &scope, &json, &rc))
            rc = cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
    if (rc >= 0 || (rc = cli_mem_open(ctx, 1, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    if ((x = cairn_archival_index(mem, scope, &n)) != CAIRN_OK)
        return cli_mem_close(ctx, db, mem, tier_fail(ctx, mem, x, 0));
    printf(json ? "{\"indexed\":%llu}\n" : "indexed: %llu\n", (unsigned long long)n);
    return cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
}

int cmd_archival(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_subcmd subs[] = {
        {"insert", "archival insert", cmd_archival_help, archival_insert},
        {"search", "archival search", cmd_archival_help, archival_search},
        {"index", "archival index", cmd_archival_help, archival_index},
        {NULL, NULL, NULL, NULL}};
    return cli_subcommand(ctx, cmd_archival_help, subs, argc, argv);
}

/* ---- tokens --------------------------------------------------------------------------- */

int cmd_tokens(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {NULL, 0}};
    const char *name, *val, *text = NULL;
    char *buf = NULL;
    size_t len = 0, chars = 0;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (x == CLI_ARG_ERR)
            rc = CLI_EXIT_USAGE;
        else if (x == CLI_ARG_HELP)
            rc = cli_help(cmd_tokens_help);
        else if (x == CLI_ARG_POS && text != NULL)
            rc = cli_usage_error(ctx->cmd, "one TEXT only (quote it, or - for standard input)");
        else if (x == CLI_ARG_POS)
            text = val;
        else
            rc = cli_parse_format(ctx->cmd, val, &json);
    }
    if (rc < 0 && text == NULL)
        rc = cli_usage_error(ctx->cmd, "missing TEXT (or - for standard input)");
    if (rc >= 0)
        return rc;
    if (strcmp(text, "-") == 0) {
        size_t cap = 0;
        for (;;) {
            size_t got;
            if (len + 65536 > cap) {
                char *p = realloc(buf, cap = cap * 2 + 65536);
                if (p == NULL) {
                    free(buf);
                    return cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
                }
                buf = p;
            }
            got = fread(buf + len, 1, cap - len, stdin);
            len += got;
            if (got == 0)
                break;
        }
        if (ferror(stdin)) {
            free(buf);
            return cli_fail(ctx->cmd, CAIRN_EIO, "reading standard input: %s", strerror(errno));
        }
        text = buf;
    } else {
        len = strlen(text);
    }
    {
        char err[CAIRN_ERRMSG_MAX];
        if (cairn_text_check(text, len, 0, err, sizeof err) != CAIRN_OK) {
            x = cli_fail(ctx->cmd, CAIRN_EINVAL, "TEXT: %s", err);
            free(buf);
            return x;
        }
    }
    for (size_t i = 0; i < len; i++)
        chars += ((unsigned char)text[i] & 0xC0) != 0x80;
    if (json)
        printf("{\"tokens\":%zu,\"characters\":%zu,\"bytes\":%zu,\"rule\":\"characters / 4, "
               "rounded up\"}\n", cairn_tokens_estimate(text, len), chars, len);
    else
        printf("%zu\n", cairn_tokens_estimate(text, len));
    free(buf);
    return CLI_EXIT_OK;
}

/* ---- import --from ada ------------------------------------------------------------- */

/* DIR/name into *data (NULL when there is none: said on stderr). -1: an
 * error, printed. */
static int read_ada_file(cli_ctx *ctx, const char *dir, const char *name, char **data, size_t *len)
{
    char path[4096];
    const char *kind = NULL;
    int rc;
    *data = NULL;
    *len = 0;
    snprintf(path, sizeof path, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/", name);
    rc = cli_read_regular(path, data, len, &kind);
    if (rc == ENOENT) {
        fprintf(stderr, "cairn: %s: %s: not there; skipped\n", ctx->cmd, path);
        return 0;
    }
    if (rc != 0) {
        cli_fail(ctx->cmd, CAIRN_EIO, "%s: %s", path, kind ? kind : strerror(rc));
        return -1;
    }
    return 0;
}

int cli_import_ada(cli_ctx *ctx, const char *dir, const char *scope, int json)
{
    static const char *const names[3] = {"bank.md", "stream.jsonl", "rotation.json"};
    char *data[3] = {NULL, NULL, NULL}, *out = NULL;
    size_t len[3] = {0, 0, 0};
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    int rc = CLI_EXIT_OK, x;

    for (int i = 0; i < 3 && rc == CLI_EXIT_OK; i++)
        if (read_ada_file(ctx, dir, names[i], &data[i], &len[i]) != 0)
            rc = CLI_EXIT_FAIL;
    if (rc == CLI_EXIT_OK && data[0] == NULL && data[1] == NULL && data[2] == NULL)
        rc = cli_fail(ctx->cmd, CAIRN_ENOTFOUND, "%s holds none of bank.md, stream.jsonl, rotation.json", dir);
    if (rc == CLI_EXIT_OK && (rc = cli_mem_open(ctx, 1, &db, &mem)) == CLI_EXIT_OK) {
        x = cairn_tiers_import_ada(mem, scope, data[0], len[0], data[1], len[1], data[2], len[2], &out);
        if (out != NULL) {
            cJSON *o = cJSON_Parse(out), *s;
            cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(o, "skipped"))
                fprintf(stderr, "cairn: %s: %s: %s; skipped\n", ctx->cmd,
                        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "where")),
                        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "why")));
            if (json) {
                print_compact(out);
            } else {
                const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "core"),
                            *st = cJSON_GetObjectItemCaseSensitive(o, "stream"),
                            *r = cJSON_GetObjectItemCaseSensitive(o, "reflections");
#define N(obj, k) ((long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(obj, k)))
                printf("core: %lld changed, %lld unchanged\n", N(c, "changed"), N(c, "unchanged"));
                printf("stream: %lld added, %lld there already\n", N(st, "added"), N(st, "existed"));
                printf("reflections: %lld added, %lld there already\n", N(r, "added"), N(r, "existed"));
#undef N
                printf("skipped: %d\n", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "skipped")));
            }
            cJSON_Delete(o);
            cairn_free(out);
        }
        rc = x == CAIRN_OK ? CLI_EXIT_OK : tier_fail(ctx, mem, x, 0);
        rc = cli_mem_close(ctx, db, mem, rc);
    }
    for (int i = 0; i < 3; i++)
        free(data[i]);
    return rc;
}
