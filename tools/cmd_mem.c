/*
 * cmd_mem.c - the memory commands: `cairn add`, `cairn get`, `cairn remove`
 * and `cairn recall`, over the cairn_mem_* API.
 *
 * Output: text by default ("key: value" lines for one memory, one line per
 * hit for recall), or with --format json Engram's objects (field names
 * id, content, category, importance, createdAt, accessedAt, accessCount,
 * expiresAt, metadata, plus namespace), built with cJSON.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_asof.h"
#include "cli_json.h"
#include "cli_progress.h"
#include "cli_embed.h"
#include "cli_proc.h"
#include "cli_reflex.h"
#include "cli_mem.h"
#include "commands.h"
#include "render.h"
#include "utf8.h"

const char cmd_add_help[] =
    "usage: cairn add TEXT [--category C] [--importance X] [--tags a,b]\n"
    "                 [--expires TIME] [--namespace NS] [--meta JSON] [--format text|json]\n"
    "\n"
    "Store a memory and print its id. If the same text is already stored in the\n"
    "namespace, nothing is written and the existing memory's id is printed\n"
    "(stderr says so). The store is created with default settings if missing.\n"
    "Text (TEXT, NS, C, the metadata) must be valid UTF-8 without NUL (README\n"
    "\"Text\"), or nothing is stored.\n"
    "\n"
    "If the namespace then holds more memories than the store's max-memories\n"
    "setting (`cairn config`; 10000 unless changed, 0 = no limit), it is pruned\n"
    "back to it (first expired, old or faded memories, then the least\n"
    "important; never the new one), and stderr says so: \"pruned N memories of\n"
    "namespace NS (maxMemories, limit L)\"; with --format json the memory gains\n"
    "\"pruned\": {\"count\", \"reason\", \"namespace\", \"limit\", \"kept\"}. `cairn\n"
    "restore ID` brings a pruned memory back (`cairn dump --type memory.delete`\n"
    "lists them).\n"
    "\n"
    "Options:\n"
    "  --category C      fact, preference, skill, episode, context, or any name of\n"
    "                    1..64 bytes (default: fact)\n"
    "  --importance X    0..1 (default: 0.5)\n"
    "  --tags a,b        kept in the metadata as \"tags\": [\"a\",\"b\"]\n"
    "  --expires TIME    after TIME the memory is never returned: ISO 8601,\n"
    "                    @<epoch ms>, or a duration from now (30m, 2h, 7d)\n"
    "  --namespace NS    the memory pool (default: the empty namespace)\n"
    "  --meta JSON       a JSON object kept with the memory\n"
    "  --format F        text (the id) or json (the whole memory)\n"
    "  --store DIR       the store (default: $CAIRN_STORE if set, else ./.cairn)\n"
    "\n"
    "Exit status: 0 stored (or already there); 1 invalid value, I/O error, store\n"
    "locked; 64 usage error.\n";

const char cmd_update_help[] =
    "usage: cairn update ID [--category C] [--importance X] [--tags a,b]\n"
    "                   [--meta JSON] [--expires TIME|never] [--format text|json]\n"
    "\n"
    "Change fields of a live memory, in one record (memory.update); what is not\n"
    "named stays. The content does not change (store a new memory and remove\n"
    "the old one). Text must be valid UTF-8 without NUL, or nothing changes.\n"
    "\n"
    "Options:\n"
    "  --category C      the new category (1..64 bytes)\n"
    "  --importance X    the new importance, 0..1\n"
    "  --tags a,b        the metadata's \"tags\" become [\"a\",\"b\"]; its other keys\n"
    "                    stay (with --meta: the keys of JSON)\n"
    "  --meta JSON       a JSON object that replaces the metadata\n"
    "  --expires TIME    after TIME the memory is never returned (as for add:\n"
    "                    ISO 8601, @<epoch ms>, or a duration from now); never:\n"
    "                    it no longer expires\n"
    "  --format F        text (the id) or json (the whole memory as changed)\n"
    "\n"
    "Exit status: 0 changed; 1 no such live memory, invalid value, I/O error,\n"
    "store locked; 64 usage error (also when nothing is to change).\n";

const char cmd_list_help[] =
    "usage: cairn list [--namespace NS[,NS...]] [--categories a,b] [--since TIME]\n"
    "                  [--until TIME] [--limit N] [--format text|json]\n"
    "\n"
    "List memories without a query: the live, unexpired memories that pass the\n"
    "filters, oldest first; with --limit N, the N newest of them (still oldest\n"
    "first), and stderr says how many more there were. Unlike recall, a listing\n"
    "counts no access. It reads every memory of the store (about a second at\n"
    "1,000,000).\n"
    "\n"
    "Options:\n"
    "  --namespace NS,...  only these namespaces (default: every namespace)\n"
    "  --categories a,b    only these categories\n"
    "  --since TIME        created at or after TIME: ISO 8601, @<epoch ms>, or a\n"
    "                      duration ago (30m, 2h, 7d)\n"
    "  --until TIME        created at or before TIME (as --since)\n"
    "  --limit N           at most N, the newest (default 50; 0: all)\n"
    "  --format F          text: \"created  [category] content  (id)\" lines, the\n"
    "                      content's first line cut at 100 bytes; json: an array\n"
    "                      of the whole memories, as get prints them\n"
    AS_OF_HELP
    "\n"
    "Exit status: 0 success (also when none matches); 1 I/O error; 64 usage\n"
    "error.\n";

const char cmd_get_help[] =
    "usage: cairn get ID [--format text|json]\n"
    "\n"
    "Print a memory. Deleted and expired memories are not found.\n"
    AS_OF_HELP
    "\n"
    "Exit status: 0 found; 1 not found or I/O error; 64 usage error.\n";

const char cmd_remove_help[] =
    "usage: cairn remove ID [--reason TEXT] [--format text|json]\n"
    "\n"
    "Delete a memory: a tombstone record is appended (with the reason), and the\n"
    "memory is never returned again; its text stays in the log for audits.\n"
    "Prints nothing (text), or {\"removed\":\"ID\"} (json).\n"
    "\n"
    "Exit status: 0 removed; 1 not found, I/O error, store locked; 64 usage error.\n";

const char cmd_restore_help[] =
    "usage: cairn restore ID [--format text|json]\n"
    "\n"
    "Bring back a memory that is no longer live: removed (cairn remove), pruned\n"
    "past the store's max-memories setting, forgotten (cairn forget), merged\n"
    "away (cairn merge) or cleared (cairn clear), as long as its records are in\n"
    "the log. It comes back with its id, namespace, content, category,\n"
    "metadata, importance, expiry, times and access count as they were when it\n"
    "went, as one new record (the records of its removal stay, for audits).\n"
    "Reads the whole log once. `cairn dump --type memory.delete` lists removed\n"
    "memories with why. Prints the memory as `cairn get` does.\n"
    "\n"
    "Refused, nothing written: an id no memory of the log had (CAIRN_ENOTFOUND);\n"
    "a memory that is live, or whose content another live memory of its\n"
    "namespace holds (CAIRN_EEXIST); a namespace at the max-memories limit\n"
    "(CAIRN_EINVAL: raise it with `cairn config max-memories N`).\n"
    "\n"
    "Exit status: 0 restored; 1 refused as above, I/O error, store locked; 64\n"
    "usage error.\n";

const char cmd_recall_help[] =
    "usage: cairn recall QUERY [--k N] [--categories a,b] [--min-importance X]\n"
    "                    [--namespace NS[,NS...]] [--explain] [--format text|json]\n"
    "                    [--lexical-only | --semantic-only] [--approximate N]\n"
    "                    [--since TIME] [--until TIME] [--tags a,b]\n"
    "                    [--where PATH=VALUE|PATH>=N|PATH<=N]...\n"
    "\n"
    "Print the memories that best match QUERY, best first. Ranking: relevance\n"
    "(0.5: BM25, with vector similarity fused in by score when the store holds\n"
    "vectors, README \"Hybrid recall\"; BM25 alone with --lexical-only,\n"
    "--no-embed or a store without vectors; similarity alone with\n"
    "--semantic-only), importance decayed with a 30-day half-life since last\n"
    "access (0.3), recency with a 30-day half-life since creation (0.2), access\n"
    "count (0.0); see README \"Recall\". Each returned memory's accessedAt and\n"
    "accessCount are updated: the recall appends its accesses to the store's\n"
    "side file ACCESS (also when the store is opened read-only), never to the\n"
    "log; the next writer folds them into one record (README \"Access\n"
    "statistics\").\n"
    "\n"
    "Options:\n"
    "  --k N               how many, 1..1000 (default: 5)\n"
    "  --categories a,b    only these categories\n"
    "  --min-importance X  only memories stored with importance >= X (0..1)\n"
    "  --namespace NS,...  the namespaces to search (default: the empty one)\n"
    "  --since TIME        only memories created at or after TIME: ISO 8601,\n"
    "                      @<epoch ms>, or a duration ago (30m, 2h, 7d)\n"
    "  --until TIME        only memories created at or before TIME (as --since)\n"
    "  --tags a,b          only memories whose metadata \"tags\" hold one of these\n"
    "                      (as add --tags stores them)\n"
    "  --where F           only memories whose metadata passes F; may be given\n"
    "                      again (all must hold). PATH=VALUE: the value at PATH\n"
    "                      equals VALUE (JSON, else text), or is an array holding\n"
    "                      it; PATH>=N, PATH<=N: a number at least, at most N.\n"
    "                      PATH: member names joined by dots, [N] for an array\n"
    "                      element (stream.cycle, refs[0])\n"
    "  --explain           show every component of each score, and which side\n"
    "                      (lexical, semantic, both) found the memory\n"
    "  --lexical-only      BM25 only\n"
    "  --semantic-only     vectors only (fails when the store has none)\n"
    "  --approximate N     search the index file's vectors through the IVF index,\n"
    "                      probing N of its lists (default: exact search)\n"
    "  --format F          text: \"score  [category] content  (id)\" lines, the\n"
    "                      content's first line cut at 100 bytes (\" ...\" when\n"
    "                      cut); json: an array of the whole memories with\n"
    "                      \"score\" (and \"explain\" with --explain)\n"
    AS_OF_HELP
    "\n"
    "Exit status: 0 success (also when nothing matches); 1 I/O error; 64 usage\n"
    "error.\n";

/* The embedder of the command that embeds (add, recall, context, import):
 * one per process, freed by cli_mem_close. */
static cli_embedder g_emb;

static int open_mem(cli_ctx *ctx, int write, cairn_db **db, cairn_mem **mem);

/* Open the store and the memory engine, with the tool's embedder. */
int cli_mem_open(cli_ctx *ctx, int write, cairn_db **db, cairn_mem **mem)
{
    int rc = open_mem(ctx, write, db, mem);
    if (rc == CLI_EXIT_OK && (rc = cli_embedder_attach(ctx, *mem, &g_emb, 0)) != CLI_EXIT_OK) {
        cli_mem_close(ctx, *db, *mem, rc);
        *db = NULL;
        *mem = NULL;
    }
    return rc;
}

/* Open the store and the memory engine: to write (the store created if
 * missing), or to read (read-only: no lock, never waits for a writer). */
static int open_mem(cli_ctx *ctx, int write, cairn_db **db, cairn_mem **mem)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    int rc;

    *mem = NULL;
    if (!write) {
        if (cli_open_read(ctx, db) != CAIRN_OK)
            return CLI_EXIT_FAIL;
    } else {
        o.create = 1;
        o.busy_timeout_ms = ctx->busy_timeout_ms;
        rc = cairn_open(db, ctx->store, &o, err, sizeof err);
        if (rc != CAIRN_OK)
            return cli_fail(ctx->cmd, rc, "%s", err[0] ? err : ctx->store);
        cli_warn_recovery(ctx, *db);
    }
    rc = cairn_mem_open(*db, NULL, mem);
    if (rc != CAIRN_OK) {
        int r = cli_fail_db(ctx->cmd, *db, rc, "opening memories");
        cairn_close(*db);
        *db = NULL;
        return r;
    }
    if (ctx->as_of_ms != 0) /* recency and expiry as they were then */
        cairn_mem_set_clock(*mem, ctx->as_of_ms);
    if (cairn_mem_index_note(*mem)[0] != 0)
        fprintf(stderr, "cairn: %s: warning: memory index: %s\n", ctx->cmd,
                cairn_mem_index_note(*mem));
    if (cairn_mem_unfinished(*mem) > 0)
        fprintf(stderr, "cairn: %s: warning: %llu memory record(s) in the log are of an import "
                        "or forget cut short by a crash or a full disk; none of it was applied\n",
                ctx->cmd, (unsigned long long)cairn_mem_unfinished(*mem));
    if (cairn_mem_skipped(*mem) > cairn_mem_unfinished(*mem))
        fprintf(stderr, "cairn: %s: warning: %llu memory record(s) in the log could not be "
                        "applied and were skipped\n",
                ctx->cmd,
                (unsigned long long)(cairn_mem_skipped(*mem) - cairn_mem_unfinished(*mem)));
    return CLI_EXIT_OK;
}

int cli_mem_close(cli_ctx *ctx, cairn_db *db, cairn_mem *mem, int exit_code)
{
    int rc;
    cairn_mem_close(mem);
    cli_embedder_done(&g_emb);
    rc = cairn_close(db);
    if (rc != CAIRN_OK && exit_code == CLI_EXIT_OK)
        return cli_fail_db(ctx->cmd, NULL, rc, "closing the store");
    return exit_code;
}

int cli_mem_fail(cli_ctx *ctx, cairn_mem *mem, int rc)
{
    const char *m = cairn_mem_errmsg(mem);
    return cli_fail(ctx->cmd, rc, "%s", m[0] ? m : cairn_strerror(rc));
}

static void print_json(cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    if (s != NULL)
        printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
}

static void print_text(const cairn_memory *m)
{
    char t[40];
    printf("id: %s\nnamespace: %s\ncategory: %s\nimportance: %g\n", m->id, m->ns, m->category,
           m->importance);
    cli_format_time(m->created_at, t, sizeof t);
    printf("created: %s\n", t);
    cli_format_time(m->accessed_at, t, sizeof t);
    printf("accessed: %s (%llu times)\n", t, (unsigned long long)m->access_count);
    if (m->expires_at) {
        cli_format_time(m->expires_at, t, sizeof t);
        printf("expires: %s\n", t);
    }
    printf("metadata: %s\ncontent: %s\n", m->metadata, m->content);
}

/* A prune a store made, on stderr: no prune goes untold. */
static void report_prune(const cli_ctx *ctx, const char *ns, const cairn_mem_prune *p)
{
    fprintf(stderr, "cairn: %s: pruned %llu %s of namespace ", ctx->cmd,
            (unsigned long long)p->pruned, p->pruned == 1 ? "memory" : "memories");
    cli_json_put_string(stderr, ns, strlen(ns));
    fprintf(stderr, " (%s, limit %llu; `cairn restore ID` brings one back, `cairn config "
                    "max-memories N` changes the limit)\n",
            p->reason, (unsigned long long)p->limit);
}

static cJSON *prune_json(const char *ns, const cairn_mem_prune *p)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cli_json_add_int(o, "count", (int64_t)p->pruned);
    cJSON_AddStringToObject(o, "reason", p->reason);
    cJSON_AddStringToObject(o, "namespace", ns);
    cli_json_add_int(o, "limit", (int64_t)p->limit);
    cli_json_add_int(o, "kept", (int64_t)p->kept);
    return o;
}

/* --meta and --tags as one JSON object text (malloc'd), or NULL if neither. */
static int build_meta(cli_ctx *ctx, const char *meta, const char *tags, char **out)
{
    char err[CAIRN_ERRMSG_MAX];
    cJSON *o;
    *out = NULL;
    if (meta == NULL && tags == NULL)
        return -1;
    /* Parsed and written again here: a \u0000 would be cut before the engine
     * could refuse it. */
    if (meta != NULL && cairn_text_check(meta, strlen(meta), 1, err, sizeof err) != CAIRN_OK)
        return cli_fail(ctx->cmd, CAIRN_EINVAL, "--meta: %s", err);
    o = meta ? cJSON_Parse(meta) : cJSON_CreateObject();
    if (o == NULL || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return cli_usage_error(ctx->cmd, "--meta must be a JSON object");
    }
    if (tags != NULL) {
        cJSON *arr = cJSON_CreateArray();
        char *copy = strdup(tags), *save = NULL;
        for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
            if (*t)
                cJSON_AddItemToArray(arr, cJSON_CreateString(t));
        free(copy);
        cJSON_DeleteItemFromObjectCaseSensitive(o, "tags");
        cJSON_AddItemToObject(o, "tags", arr);
    }
    *out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return *out ? -1 : cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
}

/* --expires TIME: ISO 8601, @<epoch ms>, or a duration from now.
 * cli_parse_time reads a duration as that long ago; here it means that
 * long from now (durations are the only times that start with a digit and
 * have no '-'). -1, or the usage error's exit code. */
static int parse_expires(const char *cmd, const char *v, int64_t *out)
{
    int64_t now = cli_now_ms();
    if (cli_parse_time(v, now, out) != 0)
        return cli_usage_error(cmd, "bad time '%s'", v);
    if (v[0] >= '0' && v[0] <= '9' && strchr(v, '-') == NULL)
        *out = now + (now - *out);
    return -1;
}

/* --since / --until TIME (as dump takes times) into *out; a duration
 * (3h) back from now, or with --as-of from the moment. */
static int parse_bound(const cli_ctx *ctx, const char *opt, const char *v, int64_t *out)
{
    if (cli_parse_time(v, ctx->as_of_ms ? ctx->as_of_ms : cli_now_ms(), out) != 0 || *out <= 0)
        return cli_usage_error(ctx->cmd, "bad time '%s' for --%s", v, opt);
    return -1;
}

static int parse_unit(const char *cmd, const char *opt, const char *v, double *out)
{
    char *end;
    double d = strtod(v, &end);
    if (*v == 0 || *end != 0 || !(d >= 0.0 && d <= 1.0))
        return cli_usage_error(cmd, "%s must be a number from 0 to 1, not '%s'", opt, v);
    *out = d;
    return -1;
}

int cmd_add(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"category", 1}, {"importance", 1}, {"tags", 1},
                                       {"expires", 1},  {"namespace", 1},  {"meta", 1},
                                       {"format", 1},   {NULL, 0}};
    cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
    cairn_mem_prune pr;
    const char *name, *val, *text = NULL, *meta = NULL, *tags = NULL;
    char *meta_json = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cairn_memory *m = NULL;
    cli_args a;
    int r, rc = -1, json = 0, existed = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_add_help);
        if (r == CLI_ARG_POS) {
            if (text != NULL)
                return cli_usage_error(ctx->cmd, "one TEXT only (quote it)");
            text = val;
        } else if (strcmp(name, "category") == 0) {
            so.category = val;
        } else if (strcmp(name, "importance") == 0) {
            rc = parse_unit(ctx->cmd, "--importance", val, &so.importance);
        } else if (strcmp(name, "tags") == 0) {
            tags = val;
        } else if (strcmp(name, "expires") == 0) {
            rc = parse_expires(ctx->cmd, val, &so.expires_at);
        } else if (strcmp(name, "namespace") == 0) {
            so.ns = val;
        } else if (strcmp(name, "meta") == 0) {
            meta = val;
        } else if (strcmp(name, "format") == 0) {
            rc = cli_parse_format(ctx->cmd, val, &json);
        }
    }
    if (rc >= 0)
        return rc;
    if (text == NULL)
        return cli_usage_error(ctx->cmd, "missing TEXT");
    if ((rc = build_meta(ctx, meta, tags, &meta_json)) >= 0)
        return rc;
    so.metadata = meta_json;
    so.prune = &pr;
    if ((rc = cli_mem_open(ctx, 1, &db, &mem)) != CLI_EXIT_OK) {
        free(meta_json);
        return rc;
    }
    r = cairn_mem_store(mem, text, &so, &m, &existed);
    /* A prune is told even when the call failed after it. */
    if (pr.pruned > 0)
        report_prune(ctx, so.ns ? so.ns : "", &pr);
    if (r != CAIRN_OK) {
        rc = cli_mem_fail(ctx, mem, r);
    } else {
        if (existed)
            fprintf(stderr, "cairn: add: already stored as %s; nothing written\n", m->id);
        if (json) {
            cJSON *o = cairn__json_memory(m);
            if (o != NULL && pr.pruned > 0)
                cJSON_AddItemToObject(o, "pruned", prune_json(so.ns ? so.ns : "", &pr));
            print_json(o);
        } else {
            printf("%s\n", m->id);
        }
        rc = CLI_EXIT_OK;
    }
    cairn_mem_free(m);
    free(meta_json);
    return cli_mem_close(ctx, db, mem, rc);
}

int cmd_update(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"category", 1}, {"importance", 1}, {"tags", 1},
                                       {"meta", 1},     {"expires", 1},    {"format", 1},
                                       {NULL, 0}};
    cairn_mem_update_opts u = CAIRN_MEM_UPDATE_OPTS_INIT;
    const char *name, *val, *id = NULL, *meta = NULL, *tags = NULL;
    char *meta_json = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cairn_memory *m = NULL;
    cli_args a;
    int r, rc = -1, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_update_help);
        if (r == CLI_ARG_POS) {
            if (id != NULL)
                return cli_usage_error(ctx->cmd, "one ID only");
            id = val;
        } else if (strcmp(name, "category") == 0) {
            u.category = val;
        } else if (strcmp(name, "importance") == 0) {
            rc = parse_unit(ctx->cmd, "--importance", val, &u.importance);
        } else if (strcmp(name, "tags") == 0) {
            tags = val;
        } else if (strcmp(name, "meta") == 0) {
            meta = val;
        } else if (strcmp(name, "expires") == 0) {
            u.set_expires = 1;
            u.expires_at = 0;
            if (strcmp(val, "never") != 0)
                rc = parse_expires(ctx->cmd, val, &u.expires_at);
        } else if (strcmp(name, "format") == 0) {
            rc = cli_parse_format(ctx->cmd, val, &json);
        }
    }
    if (rc >= 0)
        return rc;
    if (id == NULL)
        return cli_usage_error(ctx->cmd, "missing ID");
    if (u.category == NULL && u.importance < 0 && meta == NULL && tags == NULL && !u.set_expires)
        return cli_usage_error(ctx->cmd, "nothing to change (see cairn help update)");
    if ((rc = open_mem(ctx, 1, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    /* --tags alone keeps the other keys of the metadata: they are read
     * first. */
    if (tags != NULL && meta == NULL) {
        r = cairn_mem_get(mem, id, &m);
        if (r != CAIRN_OK)
            return cli_mem_close(ctx, db, mem, cli_mem_fail(ctx, mem, r));
        meta = m->metadata;
    }
    rc = meta != NULL || tags != NULL ? build_meta(ctx, meta, tags, &meta_json) : -1;
    cairn_mem_free(m);
    m = NULL;
    if (rc >= 0)
        return cli_mem_close(ctx, db, mem, rc);
    u.metadata = meta_json;
    r = cairn_mem_update(mem, id, &u);
    free(meta_json);
    if (r == CAIRN_OK && json)
        r = cairn_mem_get(mem, id, &m);
    if (r != CAIRN_OK)
        return cli_mem_close(ctx, db, mem, cli_mem_fail(ctx, mem, r));
    if (json)
        print_json(cairn__json_memory(m));
    else
        printf("%s\n", id);
    cairn_mem_free(m);
    return cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
}

/* The memory a call (status r) gave, as text or JSON, or its error; then
 * close. */
static int show_and_close(cli_ctx *ctx, cairn_db *db, cairn_mem *mem, int r, cairn_memory *m,
                          int json)
{
    int rc = CLI_EXIT_OK;
    if (r != CAIRN_OK)
        rc = cli_mem_fail(ctx, mem, r);
    else if (json)
        print_json(cairn__json_memory(m));
    else
        print_text(m);
    cairn_mem_free(m);
    return cli_mem_close(ctx, db, mem, rc);
}

int cmd_get(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {NULL, 0}};
    const char *name, *val, *id = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cairn_memory *m = NULL;
    cli_args a;
    int r, rc = -1, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_get_help);
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
    if ((rc = open_mem(ctx, 0, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    r = cairn_mem_get(mem, id, &m);
    return show_and_close(ctx, db, mem, r, m, json);
}

int cmd_remove(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"reason", 1}, {"format", 1}, {NULL, 0}};
    const char *name, *val, *id = NULL, *reason = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cli_args a;
    int r, rc, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_remove_help);
        if (r == CLI_ARG_POS) {
            if (id != NULL)
                return cli_usage_error(ctx->cmd, "one ID only");
            id = val;
        } else if (strcmp(name, "format") == 0) {
            if ((r = cli_parse_format(ctx->cmd, val, &json)) >= 0)
                return r;
        } else {
            reason = val;
        }
    }
    if (id == NULL)
        return cli_usage_error(ctx->cmd, "missing ID");
    if ((rc = open_mem(ctx, 1, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    r = cairn_mem_delete(mem, id, reason);
    rc = r == CAIRN_OK ? CLI_EXIT_OK : cli_mem_fail(ctx, mem, r);
    if (rc == CLI_EXIT_OK && json) {
        printf("{\"removed\":");
        cli_json_put_string(stdout, id, strlen(id));
        printf("}\n");
    }
    return cli_mem_close(ctx, db, mem, rc);
}

int cmd_restore(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {NULL, 0}};
    const char *name, *val, *id = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cairn_memory *m = NULL;
    cli_args a;
    int r, rc, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_restore_help);
        if (r == CLI_ARG_POS) {
            if (id != NULL)
                return cli_usage_error(ctx->cmd, "one ID only");
            id = val;
        } else if ((r = cli_parse_format(ctx->cmd, val, &json)) >= 0) {
            return r;
        }
    }
    if (id == NULL)
        return cli_usage_error(ctx->cmd, "missing ID");
    if ((rc = open_mem(ctx, 1, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    r = cairn_mem_restore(mem, id, &m);
    return show_and_close(ctx, db, mem, r, m, json);
}

/* Split a comma list in place into *out (malloc'd array). */
static size_t split_list(char *s, const char ***out)
{
    size_t n = 1, k = 0;
    char *save = NULL;
    for (const char *p = s; *p; p++)
        n += *p == ',';
    *out = calloc(n, sizeof **out);
    if (*out == NULL)
        return 0;
    for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save))
        (*out)[k++] = t;
    return k;
}

/* cmd_list's filter and the newest `limit` that pass it, in a ring. */
typedef struct lister {
    const char **cats;
    size_t n_cats;
    int64_t since, until;
    cairn_memory **ring;
    size_t limit, n, seen, cap;
} lister;

static int list_one(void *user, cairn_memory *m)
{
    lister *l = user;
    int keep = (l->since == 0 || m->created_at >= l->since) &&
               (l->until == 0 || m->created_at <= l->until);
    for (size_t i = 0; keep && l->n_cats > 0; i++) {
        if (i == l->n_cats) {
            keep = 0;
            break;
        }
        if (strcmp(m->category, l->cats[i]) == 0)
            break;
    }
    if (!keep) {
        cairn_mem_free(m);
        return 0;
    }
    if (l->limit == 0) { /* all: an array that grows */
        if (l->n == l->cap) {
            size_t cap = l->cap ? 2 * l->cap : 64;
            cairn_memory **r = realloc(l->ring, cap * sizeof *r);
            if (r == NULL) {
                cairn_mem_free(m);
                return CAIRN_ENOMEM;
            }
            l->ring = r;
            l->cap = cap;
        }
        l->ring[l->n++] = m;
        l->seen++;
        return 0;
    }
    cairn_mem_free(l->ring[l->seen % l->limit]); /* NULL until the ring is full */
    l->ring[l->seen % l->limit] = m;
    l->seen++;
    l->n = l->seen < l->limit ? l->seen : l->limit;
    return 0;
}

int cmd_list(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"namespace", 1}, {"categories", 1}, {"since", 1},
                                       {"until", 1},     {"limit", 1},      {"format", 1},
                                       {NULL, 0}};
    const char *name, *val, **ns_list = NULL;
    char *cats = NULL, *nss = NULL;
    size_t n_ns = 0;
    lister l;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    uint64_t limit = 50;
    cli_args a;
    int r, rc = -1, json = 0;

    memset(&l, 0, sizeof l);
    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            rc = CLI_EXIT_USAGE;
        else if (r == CLI_ARG_HELP)
            rc = cli_help(cmd_list_help);
        else if (r == CLI_ARG_POS)
            rc = cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
        else if (strcmp(name, "namespace") == 0) {
            free(nss);
            nss = strdup(val);
        } else if (strcmp(name, "categories") == 0) {
            free(cats);
            cats = strdup(val);
        } else if (strcmp(name, "since") == 0 || strcmp(name, "until") == 0) {
            rc = parse_bound(ctx, name, val, name[0] == 's' ? &l.since : &l.until);
        } else if (strcmp(name, "limit") == 0) {
            if (cli_parse_u64(val, 100000000, &limit) != 0)
                rc = cli_usage_error(ctx->cmd, "--limit must be a number, not '%s'", val);
        } else if (strcmp(name, "format") == 0) {
            rc = cli_parse_format(ctx->cmd, val, &json);
        }
    }
    if (rc < 0 && cats != NULL)
        l.n_cats = split_list(cats, &l.cats);
    if (rc < 0 && nss != NULL)
        n_ns = split_list(nss, &ns_list);
    l.limit = (size_t)limit;
    if (rc < 0 && limit > 0 && (l.ring = calloc((size_t)limit, sizeof *l.ring)) == NULL)
        rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
    if (rc < 0 && (rc = open_mem(ctx, 0, &db, &mem)) == CLI_EXIT_OK) {
        r = cairn_mem_each(mem, nss ? ns_list : NULL, n_ns, list_one, &l);
        if (r != CAIRN_OK) {
            rc = cli_mem_fail(ctx, mem, r);
        } else {
            cJSON *arr = json ? cJSON_CreateArray() : NULL;
            size_t first = l.limit != 0 && l.seen > l.limit ? l.seen % l.limit : 0;
            for (size_t i = 0; i < l.n; i++) {
                const cairn_memory *m = l.ring[(first + i) % (l.limit ? l.limit : l.n)];
                if (json) {
                    cJSON_AddItemToArray(arr, cairn__json_memory(m));
                } else {
                    char t[40];
                    int w = (int)strcspn(m->content, "\r\n"), cut = w > 100 ? 100 : w;
                    while (cut > 0 && cut < w && ((unsigned char)m->content[cut] & 0xC0) == 0x80)
                        cut--;
                    cli_format_time(m->created_at, t, sizeof t);
                    printf("%s  [%s] %.*s%s  (%s)\n", t, m->category, cut, m->content,
                           cut < w ? " ..." : "", m->id);
                }
            }
            if (json)
                print_json(arr);
            if (l.seen > l.n)
                fprintf(stderr, "cairn: list: %zu more match (--limit %zu; 0: all)\n",
                        l.seen - l.n, l.limit);
        }
    }
    for (size_t i = 0; l.ring != NULL && i < (l.limit ? l.limit : l.n); i++)
        cairn_mem_free(l.ring[i]);
    free(l.ring);
    free(l.cats);
    free(cats);
    free(ns_list);
    free(nss);
    return mem != NULL ? cli_mem_close(ctx, db, mem, rc) : rc;
}

int cmd_recall(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"k", 1}, {"categories", 1}, {"min-importance", 1},
                                       {"namespace", 1}, {"explain", 0}, {"format", 1},
                                       {"lexical-only", 0}, {"semantic-only", 0},
                                       {"approximate", 1}, {"since", 1}, {"until", 1},
                                       {"tags", 1},        {"where", 1},   {NULL, 0}};
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    cairn_where wh[64];
    char wpath[64][256];
    const char *name, *val, *query = NULL;
    char *cats = NULL, *nss = NULL, *tagbuf = NULL;
    const char **cat_list = NULL, **ns_list = NULL, **tag_list = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cairn_recall_hit *h = NULL;
    size_t n = 0;
    uint64_t k;
    cli_args a;
    int r, rc = -1, json = 0, explain = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            rc = CLI_EXIT_USAGE;
        else if (r == CLI_ARG_HELP)
            rc = cli_help(cmd_recall_help);
        else if (r == CLI_ARG_POS) {
            if (query != NULL)
                rc = cli_usage_error(ctx->cmd, "one QUERY only (quote it)");
            query = val;
        } else if (strcmp(name, "k") == 0) {
            if (cli_parse_u64(val, 1000, &k) != 0 || k == 0)
                rc = cli_usage_error(ctx->cmd, "--k must be 1..1000, not '%s'", val);
            ro.k = (size_t)k;
        } else if (strcmp(name, "categories") == 0) {
            free(cats);
            cats = strdup(val);
        } else if (strcmp(name, "min-importance") == 0) {
            rc = parse_unit(ctx->cmd, "--min-importance", val, &ro.min_importance);
        } else if (strcmp(name, "namespace") == 0) {
            free(nss);
            nss = strdup(val);
        } else if (strcmp(name, "explain") == 0) {
            explain = 1;
        } else if (strcmp(name, "tags") == 0) {
            free(tagbuf);
            tagbuf = strdup(val);
        } else if (strcmp(name, "where") == 0) {
            if (ro.n_where == 64)
                rc = cli_usage_error(ctx->cmd, "at most 64 --where filters");
            else if ((rc = cli_parse_where(ctx->cmd, val, wpath[ro.n_where], sizeof wpath[0],
                                           &wh[ro.n_where])) < 0)
                ro.where = wh, ro.n_where++;
        } else if (strcmp(name, "since") == 0 || strcmp(name, "until") == 0) {
            rc = parse_bound(ctx, name, val, name[0] == 's' ? &ro.since : &ro.until);
        } else if (strcmp(name, "format") == 0) {
            rc = cli_parse_format(ctx->cmd, val, &json);
        } else if (strcmp(name, "approximate") == 0) {
            uint64_t np = 0;
            if (cli_parse_u64(val, 1u << 20, &np) != 0 || np == 0)
                rc = cli_usage_error(ctx->cmd, "--approximate must be a number of lists, 1 or more");
            ro.approximate = (size_t)np;
        } else if (strcmp(name, "lexical-only") == 0 || strcmp(name, "semantic-only") == 0) {
            cairn_recall_mode md = name[0] == 'l' ? CAIRN_RECALL_LEXICAL : CAIRN_RECALL_SEMANTIC;
            if (ro.mode != CAIRN_RECALL_HYBRID && ro.mode != md)
                rc = cli_usage_error(ctx->cmd, "--lexical-only and --semantic-only exclude each other");
            ro.mode = md;
        }
    }
    if (rc < 0 && query == NULL)
        rc = cli_usage_error(ctx->cmd, "missing QUERY");
    if (rc >= 0)
        goto done;
    if (cats != NULL) {
        ro.n_categories = split_list(cats, &cat_list);
        ro.categories = cat_list;
    }
    if (nss != NULL) {
        ro.n_ns = split_list(nss, &ns_list);
        ro.ns = ns_list;
    }
    if (tagbuf != NULL) {
        ro.n_tags = split_list(tagbuf, &tag_list);
        ro.tags = tag_list;
    }
    if ((rc = cli_mem_open(ctx, 0, &db, &mem)) != CLI_EXIT_OK)
        goto done;
    r = cairn_mem_recall(mem, query, &ro, &h, &n);
    if (r != CAIRN_OK) {
        rc = cli_mem_close(ctx, db, mem, cli_mem_fail(ctx, mem, r));
        goto done;
    }
    if (json) {
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; i < n && arr; i++) {
            cJSON *o = cairn__json_memory(&h[i].mem);
            cJSON_AddNumberToObject(o, "score", h[i].score);
            if (explain)
                cairn__json_explain(o, &h[i]);
            cJSON_AddItemToArray(arr, o);
        }
        print_json(arr);
    } else {
        for (size_t i = 0; i < n; i++) {
            /* one line each: the content's first line, cut at 100 bytes */
            const char *c = h[i].mem.content;
            int w = (int)strcspn(c, "\r\n"), cut = w > 100 ? 100 : w;
            while (cut > 0 && cut < w && ((unsigned char)c[cut] & 0xC0) == 0x80)
                cut--; /* never half a UTF-8 character */
            printf("%.4f  [%s] %.*s%s  (%s)\n", h[i].score, h[i].mem.category, cut, c,
                   cut < w || c[w] ? " ..." : "", h[i].mem.id);
            if (explain)
                printf("        source %s  bm25 %.4f (rank %u)  similarity %.4f (rank %u)\n"
                       "        relevance %.4f  importance %.4f  recency %.4f  access %.4f\n",
                       cairn__json_source(h[i].source), h[i].bm25, h[i].lexical_rank, h[i].similarity,
                       h[i].semantic_rank, h[i].relevance, h[i].importance, h[i].recency,
                       h[i].access);
        }
    }
    cairn_recall_free(h, n);
    rc = cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
done:
    free(cats);
    free(nss);
    free(cat_list);
    free(tag_list);
    free(tagbuf);
    free(ns_list);
    return rc;
}

const char cmd_context_help[] =
    "usage: cairn context QUERY [--format bullets|prose|xml|json] [--max-tokens N]\n"
    "                     [--k N] [--categories a,b] [--namespace NS[,NS...]]\n"
    "\n"
    "Print the memories recall finds for QUERY as a block for a prompt:\n"
    "  bullets  Relevant memories:\\n- content [category] ... (default)\n"
    "  prose    Relevant memories: First. Second.\n"
    "  xml      <memories> <memory category=\"...\">...</memory> </memories>\n"
    "  json     [{\"content\": \"...\", \"category\": \"...\"}, ...]\n"
    "With --max-tokens, memories are added best first while the whole block's\n"
    "estimate (characters / 4, rounded up) stays within N. Prints nothing when\n"
    "no memory is included. Counts as a recall (access statistics).\n"
    AS_OF_HELP
    "\n"
    "Exit status: 0 success; 1 I/O error; 64 usage error.\n";

int cmd_context(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {"max-tokens", 1}, {"k", 1},
                                       {"categories", 1}, {"namespace", 1}, {NULL, 0}};
    cairn_context_opts co = CAIRN_CONTEXT_OPTS_INIT;
    const char *name, *val, *query = NULL;
    char *cats = NULL, *nss = NULL, *out = NULL;
    const char **cat_list = NULL, **ns_list = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    uint64_t v;
    cli_args a;
    int r, rc = -1;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            rc = CLI_EXIT_USAGE;
        else if (r == CLI_ARG_HELP)
            rc = cli_help(cmd_context_help);
        else if (r == CLI_ARG_POS) {
            if (query != NULL)
                rc = cli_usage_error(ctx->cmd, "one QUERY only (quote it)");
            query = val;
        } else if (strcmp(name, "format") == 0) {
            static const char *const names[] = {"bullets", "prose", "xml", "json"};
            int found = 0;
            for (int i = 0; i < 4; i++)
                if (strcmp(val, names[i]) == 0) {
                    co.format = (cairn_context_format)i;
                    found = 1;
                }
            if (!found)
                rc = cli_usage_error(ctx->cmd, "--format must be bullets, prose, xml or json");
        } else if (strcmp(name, "max-tokens") == 0) {
            if (cli_parse_u64(val, 100000000, &v) != 0 || v == 0)
                rc = cli_usage_error(ctx->cmd, "--max-tokens must be a positive integer");
            co.max_tokens = (size_t)v;
        } else if (strcmp(name, "k") == 0) {
            if (cli_parse_u64(val, 1000, &v) != 0 || v == 0)
                rc = cli_usage_error(ctx->cmd, "--k must be 1..1000, not '%s'", val);
            co.recall.k = (size_t)v;
        } else if (strcmp(name, "categories") == 0) {
            free(cats);
            cats = strdup(val);
        } else if (strcmp(name, "namespace") == 0) {
            free(nss);
            nss = strdup(val);
        }
    }
    if (rc < 0 && query == NULL)
        rc = cli_usage_error(ctx->cmd, "missing QUERY");
    if (rc >= 0)
        goto done;
    if (cats != NULL) {
        co.recall.n_categories = split_list(cats, &cat_list);
        co.recall.categories = cat_list;
    }
    if (nss != NULL) {
        co.recall.n_ns = split_list(nss, &ns_list);
        co.recall.ns = ns_list;
    }
    if ((rc = cli_mem_open(ctx, 0, &db, &mem)) != CLI_EXIT_OK)
        goto done;
    r = cairn_mem_context(mem, query, &co, &out, NULL);
    if (r != CAIRN_OK) {
        rc = cli_mem_close(ctx, db, mem, cli_mem_fail(ctx, mem, r));
        goto done;
    }
    if (out[0])
        printf("%s\n", out);
    free(out);
    rc = cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
done:
    free(cats);
    free(nss);
    free(cat_list);
    free(ns_list);
    return rc;
}

const char cmd_forget_help[] =
    "usage: cairn forget [--mode gentle|normal|aggressive] [--max-age DAYS]\n"
    "                    [--min-importance X] [--namespace NS[,NS...]] [--dry-run]\n"
    "                    [--format text|json]\n"
    "\n"
    "Prune memories. Every mode prunes expired memories and those created more\n"
    "than --max-age days ago (default 90, maxRetentionDays); normal (the default)\n"
    "also those whose decayed importance (importance x 0.5^(days since last\n"
    "access / 30)) is below 0.01; aggressive also the bottom 10% of the rest by\n"
    "decayed importance. --min-importance X also prunes decayed importance < X.\n"
    "Pruned memories get tombstones (reason \"forget:MODE\"), all in one commit.\n"
    "\n"
    "Output: \"pruned: N\" and \"kept: M\" lines, or {\"pruned\":N,\"kept\":M}.\n"
    "With --dry-run, what would be pruned, and nothing changes.\n"
    "\n"
    "Exit status: 0 success; 1 I/O error, store locked; 64 usage error.\n";

int cmd_forget(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"mode", 1}, {"max-age", 1}, {"min-importance", 1},
                                       {"namespace", 1}, {"dry-run", 0}, {"format", 1},
                                       {NULL, 0}};
    cairn_forget_opts fo = CAIRN_FORGET_OPTS_INIT;
    const char *name, *val;
    const char **ns_list = NULL;
    char *nss = NULL, *end;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    uint64_t pruned = 0, kept = 0;
    cli_args a;
    int r, rc = -1, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            rc = CLI_EXIT_USAGE;
        else if (r == CLI_ARG_HELP)
            rc = cli_help(cmd_forget_help);
        else if (r == CLI_ARG_POS)
            rc = cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
        else if (strcmp(name, "mode") == 0) {
            if (strcmp(val, "gentle") == 0)
                fo.mode = CAIRN_FORGET_GENTLE;
            else if (strcmp(val, "normal") == 0)
                fo.mode = CAIRN_FORGET_NORMAL;
            else if (strcmp(val, "aggressive") == 0)
                fo.mode = CAIRN_FORGET_AGGRESSIVE;
            else
                rc = cli_usage_error(ctx->cmd, "--mode must be gentle, normal or aggressive");
        } else if (strcmp(name, "max-age") == 0) {
            fo.max_age_days = strtod(val, &end);
            if (*val == 0 || *end != 0 || !(fo.max_age_days > 0))
                rc = cli_usage_error(ctx->cmd, "--max-age must be a positive number of days");
        } else if (strcmp(name, "min-importance") == 0) {
            rc = parse_unit(ctx->cmd, "--min-importance", val, &fo.min_importance);
        } else if (strcmp(name, "namespace") == 0) {
            free(nss);
            nss = strdup(val);
        } else if (strcmp(name, "dry-run") == 0) {
            fo.dry_run = 1;
        } else if (strcmp(name, "format") == 0) {
            rc = cli_parse_format(ctx->cmd, val, &json);
        }
    }
    if (rc >= 0)
        goto done;
    if (nss != NULL) {
        fo.n_ns = split_list(nss, &ns_list);
        fo.ns = ns_list;
    }
    if ((rc = open_mem(ctx, 1, &db, &mem)) != CLI_EXIT_OK)
        goto done;
    r = cairn_mem_forget(mem, &fo, &pruned, &kept);
    if (r != CAIRN_OK) {
        rc = cli_mem_close(ctx, db, mem, cli_mem_fail(ctx, mem, r));
        goto done;
    }
    if (json)
        printf("{\"pruned\":%llu,\"kept\":%llu}\n", (unsigned long long)pruned,
               (unsigned long long)kept);
    else
        printf("pruned: %llu\nkept: %llu\n", (unsigned long long)pruned,
               (unsigned long long)kept);
    rc = cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
done:
    free(nss);
    free(ns_list);
    return rc;
}

const char cmd_merge_help[] =
    "usage: cairn merge [--threshold X] [--dry-run] [--explain] [--namespace NS[,NS...]]\n"
    "                   [--format text|json]\n"
    "\n"
    "Merge near-duplicate memories: pairs whose vectors have cosine similarity\n"
    "at least X (default 0.85). In each pair the higher importance is kept\n"
    "(equal: the older); the other gets a tombstone (reason \"merge:<kept id>\")\n"
    "and the kept memory's metadata gains a \"mergedFrom\" entry (id, content,\n"
    "similarity, importance, at). A memory is merged away at most once, and one\n"
    "that kept another is never merged away in the same run. Memories without a\n"
    "vector are never merged; a store without vectors is an error.\n"
    "\n"
    "Options:\n"
    "  --threshold X       0 < X <= 1 (default 0.85)\n"
    "  --dry-run           find and report, change nothing (the same pairs)\n"
    "  --explain           list each pair: kept, merged, similarity, why\n"
    "  --namespace NS,...  the namespaces (default: the empty one)\n"
    "  --format F          text: \"merged: N\" and \"kept: N\" lines (and pairs);\n"
    "                      json: {\"merged\", \"kept\", \"dryRun\", \"pairs\"}\n"
    "\n"
    "Exit status: 0 success (also when nothing merges); 1 no vectors, I/O error;\n"
    "64 usage error.\n";

int cmd_merge(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"threshold", 1}, {"dry-run", 0}, {"explain", 0},
                                       {"namespace", 1}, {"format", 1}, {NULL, 0}};
    cairn_merge_opts mo = CAIRN_MERGE_OPTS_INIT;
    cairn_merge_pair *pairs = NULL;
    const char *name, *val;
    const char **ns_list = NULL;
    char *nss = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    uint64_t merged = 0, kept = 0;
    size_t np = 0;
    cli_args a;
    int r, rc = -1, json = 0, explain = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            rc = CLI_EXIT_USAGE;
        else if (r == CLI_ARG_HELP)
            rc = cli_help(cmd_merge_help);
        else if (r == CLI_ARG_POS)
            rc = cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
        else if (strcmp(name, "threshold") == 0) {
            rc = parse_unit(ctx->cmd, "--threshold", val, &mo.threshold);
            if (rc < 0 && mo.threshold == 0)
                rc = cli_usage_error(ctx->cmd, "--threshold must be above 0");
        } else if (strcmp(name, "dry-run") == 0) {
            mo.dry_run = 1;
        } else if (strcmp(name, "explain") == 0) {
            explain = 1;
        } else if (strcmp(name, "namespace") == 0) {
            free(nss);
            nss = strdup(val);
        } else if (strcmp(name, "format") == 0) {
            rc = cli_parse_format(ctx->cmd, val, &json);
        }
    }
    if (rc >= 0)
        goto done;
    if (nss != NULL) {
        mo.n_ns = split_list(nss, &ns_list);
        mo.ns = ns_list;
    }
    if ((rc = open_mem(ctx, 1, &db, &mem)) != CLI_EXIT_OK)
        goto done;
    r = cairn_mem_merge(mem, &mo, &pairs, &np, &merged, &kept);
    if (r == CAIRN_EUNAVAIL) { /* no vectors: say how memories get them */
        rc = cli_mem_close(ctx, db, mem,
                       cli_fail(ctx->cmd, r, "%s; memories get vectors when they are stored "
                                "with --embed-builtin or --embed-cmd", cairn_mem_errmsg(mem)));
        goto done;
    }
    if (r != CAIRN_OK) {
        rc = cli_mem_close(ctx, db, mem, cli_mem_fail(ctx, mem, r));
        goto done;
    }
    if (json) {
        cJSON *o = cJSON_CreateObject(), *arr;
        cJSON_AddNumberToObject(o, "merged", (double)merged);
        cJSON_AddNumberToObject(o, "kept", (double)kept);
        cJSON_AddBoolToObject(o, "dryRun", mo.dry_run);
        arr = cJSON_AddArrayToObject(o, "pairs");
        for (size_t i = 0; explain && i < np; i++) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "kept", pairs[i].kept);
            cJSON_AddStringToObject(p, "merged", pairs[i].merged);
            cJSON_AddNumberToObject(p, "similarity", pairs[i].similarity);
            cJSON_AddNumberToObject(p, "keptImportance", pairs[i].kept_importance);
            cJSON_AddNumberToObject(p, "mergedImportance", pairs[i].merged_importance);
            cJSON_AddStringToObject(p, "why", pairs[i].why);
            cJSON_AddItemToArray(arr, p);
        }
        print_json(o);
    } else {
        for (size_t i = 0; explain && i < np; i++)
            printf("%s %s into %s: similarity %.4f, kept for %s (%.2f vs %.2f)\n",
                   mo.dry_run ? "would merge" : "merged", pairs[i].merged, pairs[i].kept,
                   pairs[i].similarity, pairs[i].why, pairs[i].kept_importance,
                   pairs[i].merged_importance);
        printf("merged: %llu\nkept: %llu\n", (unsigned long long)merged, (unsigned long long)kept);
    }
    free(pairs);
    rc = cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
done:
    free(nss);
    free(ns_list);
    return rc;
}

const char cmd_clear_help[] =
    "usage: cairn clear [--namespace NS] --yes [--format text|json]\n"
    "\n"
    "Delete every memory of a namespace (--namespace), or of every namespace\n"
    "(without it), with one memory.clear record. Irreversible for queries; the\n"
    "records stay in the log for audits. --yes is required. Prints nothing\n"
    "(text), or {\"cleared\":\"NS\"} ({\"cleared\":null} for all) (json).\n"
    "\n"
    "Exit status: 0 cleared; 1 I/O error, store locked; 64 usage error (no --yes).\n";

int cmd_clear(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"namespace", 1}, {"yes", 0}, {"format", 1}, {NULL, 0}};
    const char *name, *val, *ns = NULL;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cli_args a;
    int r, rc, yes = 0, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_clear_help);
        if (r == CLI_ARG_POS)
            return cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
        if (strcmp(name, "namespace") == 0)
            ns = val;
        else if (strcmp(name, "format") == 0) {
            if ((r = cli_parse_format(ctx->cmd, val, &json)) >= 0)
                return r;
        } else
            yes = 1;
    }
    if (!yes)
        return cli_usage_error(ctx->cmd, "this deletes every memory%s; add --yes",
                               ns ? " of the namespace" : "");
    if ((rc = open_mem(ctx, 1, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    r = cairn_mem_clear(mem, ns);
    rc = r == CAIRN_OK ? CLI_EXIT_OK : cli_mem_fail(ctx, mem, r);
    if (rc == CLI_EXIT_OK && json) {
        printf("{\"cleared\":");
        if (ns != NULL)
            cli_json_put_string(stdout, ns, strlen(ns));
        else
            printf("null");
        printf("}\n");
    }
    return cli_mem_close(ctx, db, mem, rc);
}

const char cmd_checkpoint_help[] =
    "usage: cairn checkpoint [--format text|json]\n"
    "\n"
    "Write the store's derived files now, each a cache of the log read in\n"
    "place by later commands, which then replay only the records after it:\n"
    "  the memory index (format-spec/memindex.md): every live memory and a\n"
    "    BM25 index per namespace, in a whole file and generations on it:\n"
    "    a checkpoint writes what changed since the files there (the new\n"
    "    memories, and what changed of those in the files), merging the\n"
    "    newest files into one when they are small next to it (a file is\n"
    "    merged with the newer ones once it holds at most twice their rows);\n"
    "  the graph file (format-spec/graph.md): the causal graph, episodes and\n"
    "    patterns, with CSR adjacency and a label index; only when the store\n"
    "    has any.\n"
    "Commands write each by themselves when they close with 1000 or more of\n"
    "its records after the last one. The log is synced first.\n"
    "Prints \"memory index: N memories up to seq S (B bytes in F files)\" and\n"
    "\"graph file: NAME, N nodes, M edges, P patterns, E episodes\" (or \"graph\n"
    "file: none (no graph records)\"); in json {\"memories\",\"covered_seq\",\n"
    "\"bytes\",\"files\",\"graph\": {\"file\",\"covered_seq\",\"nodes\",\"edges\",\n"
    "\"patterns\",\"episodes\"} or null}.\n"
    "\n"
    "Exit status: 0 written; 1 I/O error, store locked; 64 usage error.\n";

/* The graph file, when the store has graph records; *st zeroed if not. */
static int checkpoint_graph(cli_ctx *ctx, cairn_db *db, cairn_reflex_status *st)
{
    cairn_reflex *r = NULL;
    int x = cairn_reflex_open(db, &r);
    memset(st, 0, sizeof *st);
    if (x == CAIRN_OK)
        x = cairn_reflex_status_get(r, st);
    if (x == CAIRN_OK && st->nodes + st->episodes + st->patterns != 0) {
        x = cairn_reflex_checkpoint(r);
        if (x == CAIRN_OK)
            x = cairn_reflex_status_get(r, st);
    } else if (x == CAIRN_OK) {
        memset(st, 0, sizeof *st);
    }
    x = x == CAIRN_OK ? CLI_EXIT_OK : cli_reflex_fail(ctx, r, x, "graph file");
    cairn_reflex_close(r);
    return x;
}

int cmd_checkpoint(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {NULL, 0}};
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cairn_mem_stats ms;
    cairn_reflex_status gs;
    int r, rc, json = 0;

    if ((rc = cli_output_args(ctx, spec, argc, argv, cmd_checkpoint_help, &json)) >= 0)
        return rc;
    if ((rc = open_mem(ctx, 1, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    r = cairn_mem_checkpoint(mem);
    if (r == CAIRN_OK)
        r = cairn_mem_stats_get(mem, &ms);
    if (r != CAIRN_OK)
        return cli_mem_close(ctx, db, mem, cli_mem_fail(ctx, mem, r));
    if ((rc = checkpoint_graph(ctx, db, &gs)) != CLI_EXIT_OK) {
        cairn_mem_stats_free(&ms);
        return cli_mem_close(ctx, db, mem, rc);
    }
    if (json) {
        printf("{\"memories\":%llu,\"covered_seq\":%llu,\"bytes\":%llu,\"files\":%llu,"
               "\"graph\":",
               (unsigned long long)ms.index_rows, (unsigned long long)ms.index_seq,
               (unsigned long long)ms.index_bytes, (unsigned long long)ms.index_files);
        if (gs.graph_file[0])
            printf("{\"file\":\"%s\",\"covered_seq\":%llu,\"nodes\":%llu,\"edges\":%llu,"
                   "\"patterns\":%llu,\"episodes\":%llu}}\n", gs.graph_file,
                   (unsigned long long)gs.graph_covered, (unsigned long long)gs.nodes,
                   (unsigned long long)gs.edges, (unsigned long long)gs.patterns,
                   (unsigned long long)gs.episodes);
        else
            printf("null}\n");
    } else {
        printf("memory index: %llu memories up to seq %llu (%llu bytes in %llu file%s)\n",
               (unsigned long long)ms.index_rows, (unsigned long long)ms.index_seq,
               (unsigned long long)ms.index_bytes, (unsigned long long)ms.index_files,
               ms.index_files == 1 ? "" : "s");
        if (gs.graph_file[0])
            printf("graph file: %s, %llu nodes, %llu edges, %llu patterns, %llu episodes\n",
                   gs.graph_file, (unsigned long long)gs.nodes, (unsigned long long)gs.edges,
                   (unsigned long long)gs.patterns, (unsigned long long)gs.episodes);
        else
            printf("graph file: none (no graph records)\n");
    }
    cairn_mem_stats_free(&ms);
    return cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
}

const char cmd_export_help[] =
    "usage: cairn export [--format json|jsonl|md|csv]\n"
    "\n"
    "Print every live, unexpired memory of every namespace, oldest first:\n"
    "  json  an array of Engram's memory objects plus \"namespace\" (default)\n"
    "  jsonl the same objects, one a line (JSON Lines)\n"
    "  md    \"## id\" sections of \"- field: value\" lines (values in JSON), then\n"
    "        the content\n"
    "  csv   RFC 4180 with a header row: id,namespace,category,importance,\n"
    "        createdAt,accessedAt,accessCount,expiresAt,metadata,content\n"
    "Each imports back exactly with `cairn import --format F` (ids, times,\n"
    "access statistics, metadata, namespaces).\n"
    "\n"
    "Exit status: 0 success; 1 no store or I/O error; 64 usage error.\n";

const char cmd_import_help[] =
    "usage: cairn import --format json|jsonl|md|csv FILE|-  [--namespace NS] [--json]\n"
    "       cairn import --from markdown DIR [--recursive] [--category C] [--namespace NS]\n"
    "                    [--json]\n"
    "       cairn import --from episodes DIR [--force] [--json]\n"
    "       cairn import --from causal-graph FILE|- [--json]\n"
    "       cairn import --from ada DIR [--scope S] [--json]\n"
    "\n"
    "First form: import what `cairn export` wrote (FILE, or - for stdin; jsonl:\n"
    "one memory object a line, blank lines passed over, as a log pipeline\n"
    "writes them; a memory without an id gets one). Every\n"
    "memory is checked first: one invalid memory (text that is not valid UTF-8\n"
    "or holds a NUL, a byte or \\u0000, included: README \"Text\") fails the\n"
    "import, the message names the memory and field, and nothing is stored.\n"
    "Memories whose id is already live, or whose content is already in their\n"
    "namespace (or earlier in FILE), are skipped. --namespace: for memories\n"
    "without one. The memories stored are one commit: after a crash, a kill\n"
    "or a full disk in the middle, the store holds all of them or none (the\n"
    "records of one cut short stay in the log, unapplied, and commands warn\n"
    "of them), and a reader never sees part of an import. An import that would\n"
    "take a namespace past the store's max-memories setting (`cairn config`)\n"
    "is refused whole: nothing is stored, and the message names the namespace\n"
    "and how to raise the limit (`cairn config max-memories N`).\n"
    "\n"
    "While it runs, a line on stderr says how long it has run, when stderr is\n"
    "a terminal (none on a pipe or a file, or with --json).\n"
    "Output: \"imported: N\" and \"skipped: M\"; with --json (--format names\n"
    "the input here) {\"imported\":N,\"skipped\":M}.\n"
    "\n"
    "Second form: every *.md file of DIR (in path order; with --recursive those\n"
    "of its folders too, symbolic links to folders not followed; without, each\n"
    "folder is reported as skipped, never passed over in silence) becomes\n"
    "a memory: content = the file, metadata {\"name\": file stem, \"path\": the\n"
    "path}; category C (default: fact). Symbolic links are followed. A file\n"
    "that is not a regular file (a FIFO, a directory, a device; never opened\n"
    "for reading), empty or not text is skipped; one that cannot be read or\n"
    "is not a valid memory fails; either way a line \"cairn: import: PATH: why;\n"
    "skipped\" (or \"failed\") on stderr, and the other files are imported,\n"
    "together, as the first form imports: one commit, memories already stored\n"
    "skipped, and one that would take a namespace past max-memories refused\n"
    "whole (nothing is stored). Output: \"imported: N\", \"skipped: M\"\n"
    "(counting those already stored) and \"failed: K\"; --json: {\"imported\",\n"
    "\"skipped\",\"failed\", \"skippedFiles\":[{\"file\",\"reason\"}] (reason\n"
    "\"already stored\" too), \"failures\":[{\"file\",\"error\",\"code\"}]}.\n"
    "\n"
    "Third form: every *.json file of DIR (not recursive, in name order) is an\n"
    "episode in ReflexionMemory's shape (as .agents/memory/episodes/ holds them),\n"
    "stored as `cairn episode new --file` does, one commit each. A session\n"
    "that has an episode is skipped unless --force (which replaces it). An\n"
    "episode is kept when only parts of it cannot be used: an empty task\n"
    "becomes the session id, and a decision or event that is not valid (a type\n"
    "the schema does not know, no content, no choice) is dropped; a line on\n"
    "stderr says each (\"FILE: events[3].type: ...; dropped\"). A file whose\n"
    "episode cannot be kept (no session, a bad outcome, not JSON) does not stop\n"
    "the others: it is counted and named. A *.json that is not a regular file\n"
    "(a FIFO, a directory) is never opened: it is skipped, with a line on\n"
    "stderr. While it runs, a progress bar on stderr when stderr is a terminal\n"
    "(none on a pipe or a file, or with --json). Output: \"imported: N\",\n"
    "\"repaired: R (...)\" when R > 0 (imported with parts dropped or\n"
    "defaulted), \"skipped: M\", \"failed: K\" and a line \"failure: FILE: why\n"
    "(CAIRN_EXXX)\" per failed file; --json: {\"imported\",\"repaired\",\n"
    "\"skipped\",\"failed\",\"failures\":[{\"file\",\"error\",\"code\"}]}.\n"
    "\n"
    "Fourth form: a causal-graph.json of ReflexionMemory's schema ({version, updated,\n"
    "nodes, edges, patterns}), in one commit (all of it or none after a crash\n"
    "or a full disk): each node, edge and pattern with\n"
    "its frequency, weight and occurrences; node ids become cairn's (from the\n"
    "label). Entries that cannot be used (unknown type, an edge to a missing\n"
    "node) are skipped and counted; text that is not valid UTF-8 or holds a\n"
    "NUL anywhere in the file fails the import (the message names the member)\n"
    "and nothing is stored. Nodes of one label are one node: those that joined\n"
    "another (in the file, or already in the graph) are counted as merged.\n"
    "Output: \"nodes: N\", \"merged: M (...)\" when M > 0, \"edges: N\",\n"
    "\"patterns: N\", \"skipped: N\"; --json: {\"nodes\",\"merged\",\"edges\",\"patterns\",\n"
    "\"skipped\"}. See `cairn causal status`.\n"
    "\n"
    "Fifth form: an ADA agent team's cognitive memory, DIR/bank.md,\n"
    "DIR/stream.jsonl and DIR/rotation.json (a missing one is said), into the\n"
    "tiers of scope S (default global; README \"Importing an ADA team's\n"
    "memory\"): bank.md's sprint, role states, threads, blockers and lessons\n"
    "into core memory, the stream's entries with their ids, cycles and times,\n"
    "rotation.json's reflections. A second import adds nothing. What no tier\n"
    "takes (a section such as Critical Path, a value past a budget, an entry\n"
    "that is not valid) is named on stderr, \"PLACE: why; skipped\". Output:\n"
    "\"core: N changed, M unchanged\", \"stream: N added, M there already\",\n"
    "\"reflections: ...\", \"skipped: K\"; --json: the report {core, stream,\n"
    "reflections, skipped: [{where, why}]}.\n"
    "\n"
    "Exit status: 0 success; 1 invalid input, unreadable file, I/O error, and\n"
    "(episodes, markdown) any file that failed, the others being imported\n"
    "(a skipped file is no failure); 64 usage error.\n";

static int parse_mem_format(const char *cmd, const char *v, cairn_mem_format *f)
{
    if (strcmp(v, "json") == 0)
        *f = CAIRN_MEM_JSON;
    else if (strcmp(v, "md") == 0)
        *f = CAIRN_MEM_MD;
    else if (strcmp(v, "csv") == 0)
        *f = CAIRN_MEM_CSV;
    else if (strcmp(v, "jsonl") == 0)
        *f = CAIRN_MEM_JSONL;
    else
        return cli_usage_error(cmd, "Invalid format '%s': json, jsonl, md or csv", v);
    return -1;
}

int cmd_export(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {NULL, 0}};
    cairn_mem_format f = CAIRN_MEM_JSON;
    const char *name, *val;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    char *out = NULL;
    size_t len = 0;
    cli_args a;
    int r, rc = -1;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_export_help);
        if (r == CLI_ARG_POS)
            return cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
        rc = parse_mem_format(ctx->cmd, val, &f);
    }
    if (rc >= 0)
        return rc;
    if (cli_open_read(ctx, &db) != CAIRN_OK)
        return CLI_EXIT_FAIL;
    r = cairn_mem_open(db, NULL, &mem);
    if (r == CAIRN_OK)
        r = cairn_mem_export(mem, f, &out, &len);
    if (r != CAIRN_OK) {
        rc = mem ? cli_mem_fail(ctx, mem, r) : cli_fail_db(ctx->cmd, db, r, "opening memories");
    } else {
        fwrite(out, 1, len, stdout);
        if (len > 0 && out[len - 1] != '\n')
            putchar('\n');
        rc = CLI_EXIT_OK;
    }
    free(out);
    cairn_mem_close(mem);
    cairn_close(db);
    return rc;
}

/* All of a file (or stdin for "-") into *out. 0, or -1 with errno. */
static int slurp(const char *path, char **out, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    char *p = NULL;
    size_t n = 0, cap = 0;
    struct stat st;
    if (f == NULL)
        return -1;
    /* A regular file: its size at once (no doubling copies of a big import) */
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
        (uint64_t)st.st_size < SIZE_MAX - 65536 - 1)
        cap = (size_t)st.st_size + 65536 + 1;
    if (cap > 0 && (p = malloc(cap)) == NULL) {
        if (f != stdin)
            fclose(f);
        return -1;
    }
    for (;;) {
        size_t got;
        if (n + 65536 + 1 > cap) {
            char *q = realloc(p, cap = cap ? cap * 2 : 131072);
            if (q == NULL) {
                free(p);
                if (f != stdin)
                    fclose(f);
                return -1;
            }
            p = q;
        }
        got = fread(p + n, 1, 65536, f);
        n += got;
        if (got < 65536)
            break;
    }
    if (ferror(f)) {
        free(p);
        if (f != stdin)
            fclose(f);
        return -1;
    }
    if (f != stdin)
        fclose(f);
    p[n] = 0;
    *out = p;
    *len = n;
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One file the import did not take: a line on stderr (unless it is only
 * already stored) and an entry {"file","reason"} (skipped) or
 * {"file","error","code"} (failed, code != 0) in list. */
static void import_report(const cli_ctx *ctx, cJSON *list, const char *path, const char *why,
                          int code)
{
    cJSON *f = cJSON_CreateObject();
    char name[32];
    if (code != 0 || strcmp(why, "already stored") != 0)
        fprintf(stderr, "cairn: %s: %s: %s; %s\n", ctx->cmd, path, why,
                code != 0 ? "failed" : "skipped");
    if (f == NULL)
        return;
    cJSON_AddStringToObject(f, "file", path);
    cJSON_AddStringToObject(f, code != 0 ? "error" : "reason", why);
    if (code != 0)
        cJSON_AddStringToObject(f, "code", cli_code_name(code, name, sizeof name));
    cJSON_AddItemToArray(list, f);
}

/* Every *.md file of dir as a memory, then the summary. A file that is not
 * a regular file is skipped, one that cannot be read or stored (the file's
 * fault: EINVAL, ETOOBIG, a read error) fails; both are reported and the
 * others still imported. The store's fault (full, locked, dead) stops it. */
/* A file of a markdown import that reads as a memory. */
typedef struct mdfile {
    char *path, *stem, *text;
    size_t len;
} mdfile;

/* The *.md files under dir (rel: the folder below it, "" at the top), as
 * paths relative to dir, into names. A subfolder is walked with
 * recursive, else reported as skipped (never in silence); names and
 * folders starting with '.' are passed over, and a symbolic link to a
 * folder is not followed (no loop). Returns 0, or -1 out of memory. */
static int collect_md(const cli_ctx *ctx, const char *dir, const char *rel, int recursive,
                      char ***names, size_t *n, size_t *cap, cJSON *skips, uint64_t *skipped,
                      cJSON *fails, uint64_t *failed)
{
    size_t plen = strlen(dir) + strlen(rel) + 2;
    char *path = malloc(plen);
    struct dirent *de;
    DIR *d;
    int rc = 0;

    if (path == NULL)
        return -1;
    snprintf(path, plen, "%s%s%s", dir, rel[0] && dir[strlen(dir) - 1] != '/' ? "/" : "", rel);
    if ((d = opendir(path)) == NULL) {
        if (rel[0]) { /* a folder below that cannot be read: failed, said */
            import_report(ctx, fails, path, strerror(errno), CAIRN_EIO);
            (*failed)++;
        }
        free(path);
        return rel[0] ? 0 : -2; /* the top: the caller says why */
    }
    while (rc == 0 && (de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name), rl = strlen(rel) + l + 2;
        char *r;
        struct stat st;
        if (de->d_name[0] == '.' || (r = malloc(rl)) == NULL) {
            rc = de->d_name[0] == '.' ? 0 : -1;
            continue;
        }
        snprintf(r, rl, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) &&
            fstatat(dirfd(d), de->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode)) {
            size_t fl = strlen(path) + l + 2;
            char *full = malloc(fl);
            if (full != NULL) { /* never followed: no loop */
                snprintf(full, fl, "%s/%s", path, de->d_name);
                import_report(ctx, skips, full, "a symbolic link to a folder (not followed)", 0);
                (*skipped)++;
                free(full);
            }
            free(r);
            continue;
        }
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
            if (recursive) {
                rc = collect_md(ctx, dir, r, 1, names, n, cap, skips, skipped, fails, failed);
            } else {
                size_t fl = strlen(path) + l + 2;
                char *full = malloc(fl);
                if (full != NULL) {
                    snprintf(full, fl, "%s/%s", path, de->d_name);
                    import_report(ctx, skips, full, "a folder (--recursive imports its files)", 0);
                    (*skipped)++;
                    free(full);
                }
            }
            free(r);
            continue;
        }
        if (l < 4 || strcmp(de->d_name + l - 3, ".md") != 0) {
            free(r);
            continue;
        }
        if (*n == *cap) {
            char **q = realloc(*names, (*cap = *cap ? *cap * 2 : 64) * sizeof **names);
            if (q == NULL) {
                free(r);
                rc = -1;
                break;
            }
            *names = q;
        }
        (*names)[(*n)++] = r;
    }
    closedir(d);
    free(path);
    return rc;
}

/* The candidates as the JSON array cairn_mem_import reads. */
static char *md_json(const mdfile *c, const size_t *live, size_t n, const char *cat, const char *ns)
{
    cJSON *arr = cJSON_CreateArray();
    char *out;
    for (size_t k = 0; arr != NULL && k < n; k++) {
        const mdfile *x = &c[live[k]];
        cJSON *o = cJSON_CreateObject(), *meta = cJSON_CreateObject();
        if (o == NULL || meta == NULL || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            cJSON_Delete(meta);
            cJSON_Delete(arr);
            return NULL;
        }
        cJSON_AddStringToObject(o, "content", x->text);
        cJSON_AddStringToObject(o, "category", cat ? cat : "fact");
        if (ns != NULL)
            cJSON_AddStringToObject(o, "namespace", ns);
        cJSON_AddStringToObject(meta, "name", x->stem);
        cJSON_AddStringToObject(meta, "path", x->path);
        cJSON_AddItemToObject(o, "metadata", meta);
    }
    out = arr ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(arr);
    return out;
}

static int import_markdown_dir(cli_ctx *ctx, cairn_mem *mem, const char *dir, const char *cat,
                               const char *ns, int recursive, int json)
{
    char *top = strdup(dir);
    char **names = NULL;
    size_t n = 0, cap = 0, dl = strlen(dir), nc = 0, nlive = 0;
    const char *sep = "/";
    uint64_t imported = 0, skipped = 0, failed = 0;
    cJSON *skips = cJSON_CreateArray(), *fails = cJSON_CreateArray();
    mdfile *cand = NULL;
    size_t *live = NULL;
    unsigned char *outcome = NULL;
    int rc = CLI_EXIT_OK, r;

    if (top == NULL || skips == NULL || fails == NULL) {
        rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
        goto done;
    }
    while (dl > 1 && dir[dl - 1] == '/')
        dl--; /* DIR/ names DIR/x.md, not DIR//x.md */
    if (dir[dl - 1] == '/')
        sep = ""; /* the root */
    top[dl] = 0;
    errno = 0;
    r = collect_md(ctx, dl == 1 && dir[0] == '/' ? "/" : top, "", recursive, &names, &n, &cap, skips,
                   &skipped, fails, &failed);
    if (r == -2) {
        rc = cli_fail(ctx->cmd, CAIRN_EIO, "%s: %s", dir, strerror(errno));
        goto done;
    }
    if (r == -1) {
        rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
        goto done;
    }
    if (n > 1)
        qsort(names, n, sizeof *names, name_cmp);
    cand = calloc(n ? n : 1, sizeof *cand);
    live = calloc(n ? n : 1, sizeof *live);
    outcome = calloc(n ? n : 1, 1);
    if (skips == NULL || fails == NULL || cand == NULL || live == NULL || outcome == NULL)
        rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
    /* Read every file; those that are no memory are skipped or failed here,
     * one by one, and the others are imported together below. */
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) {
        size_t plen = dl + strlen(names[i]) + 2;
        char *path = malloc(plen), *text = NULL;
        const char *kind = NULL;
        size_t len = 0;
        cairn__err e;

        if (path == NULL) {
            rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
            break;
        }
        snprintf(path, plen, "%.*s%s%s", (int)dl, dir, sep, names[i]);
        r = cli_read_regular(path, &text, &len, &kind);
        if (r < 0) {
            import_report(ctx, fails, path, strerror(errno), CAIRN_EIO);
            failed++;
        } else if (r > 0) {
            import_report(ctx, skips, path, kind, 0);
            skipped++;
        } else if (len == 0 || strlen(text) != len) {
            import_report(ctx, skips, path, "empty or not text", 0);
            skipped++;
        } else if (len > (1u << 20)) {
            import_report(ctx, fails, path, "content must be 1 byte..1 MiB", CAIRN_EINVAL);
            failed++;
        } else if (cairn__utf8_check(&e, "content", text, len) != CAIRN_OK) {
            import_report(ctx, fails, path, e.msg, CAIRN_EINVAL);
            failed++;
        } else {
            char *base = strrchr(names[i], '/');
            names[i][strlen(names[i]) - 3] = 0; /* the stem: the file's name without .md */
            cand[nc].path = path;
            cand[nc].stem = base ? base + 1 : names[i];
            cand[nc].text = text;
            cand[nc].len = len;
            live[nlive++] = nc++;
            continue;
        }
        free(text);
        free(path);
    }
    /* One commit, as the first form: the store's limit holds for all of it
     * (an import that would pass it stores nothing). A memory the import
     * refuses fails its file, and the rest is tried again. */
    while (rc == CLI_EXIT_OK && nlive > 0) {
        char *data = md_json(cand, live, nlive, cat, ns);
        size_t bad = 0;
        uint64_t imp = 0, skp = 0;

        if (data == NULL) {
            rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
            break;
        }
        r = cairn_mem_import_each(mem, CAIRN_MEM_JSON, data, strlen(data), ns, outcome, nlive, &bad,
                                  &imp, &skp);
        free(data);
        if (r == CAIRN_EINVAL && bad >= 1 && bad <= nlive) {
            import_report(ctx, fails, cand[live[bad - 1]].path, cairn_mem_errmsg(mem), r);
            failed++;
            memmove(live + bad - 1, live + bad, (nlive - bad) * sizeof *live);
            nlive--;
            continue;
        }
        if (r != CAIRN_OK) {
            rc = cli_fail(ctx->cmd, r, "%s", cairn_mem_errmsg(mem));
            break;
        }
        for (size_t k = 0; k < nlive; k++) {
            if (outcome[k] == CAIRN_IMPORT_STORED) {
                imported++;
            } else {
                import_report(ctx, skips, cand[live[k]].path, "already stored", 0);
                skipped++;
            }
        }
        break;
    }
    /* the summary, also after a stop: what was stored is stored */
    if (skips != NULL && fails != NULL && rc == CLI_EXIT_OK) {
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "imported", (double)imported);
            cJSON_AddNumberToObject(o, "skipped", (double)skipped);
            cJSON_AddNumberToObject(o, "failed", (double)failed);
            cJSON_AddItemToObject(o, "skippedFiles", skips);
            cJSON_AddItemToObject(o, "failures", fails);
            skips = fails = NULL;
            print_json(o);
        } else {
            printf("imported: %llu\nskipped: %llu\nfailed: %llu\n", (unsigned long long)imported,
                   (unsigned long long)skipped, (unsigned long long)failed);
        }
    }
    if (rc == CLI_EXIT_OK && failed > 0) {
        fflush(stdout);
        fprintf(stderr, "cairn: %s: %llu file(s) failed, the others were imported\n", ctx->cmd,
                (unsigned long long)failed);
        rc = CLI_EXIT_FAIL;
    }
    for (size_t k = 0; k < nc; k++) {
        free(cand[k].path);
        free(cand[k].text);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(cand);
    free(live);
    free(outcome);
done:
    free(top);
    cJSON_Delete(skips);
    cJSON_Delete(fails);
    return rc;
}

int cmd_import(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {"from", 1}, {"category", 1},
                                       {"namespace", 1}, {"json", 0}, {"force", 0},
                                       {"recursive", 0}, {"scope", 1}, {NULL, 0}};
    cairn_mem_format f = CAIRN_MEM_JSON;
    const char *name, *val, *path = NULL, *from = NULL, *cat = NULL, *ns = NULL, *scope = NULL;
    int have_format = 0, json = 0, force = 0, recursive = 0;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    char *data = NULL;
    size_t len = 0;
    uint64_t imported = 0, skipped = 0;
    cli_args a;
    int r, rc = -1;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_import_help);
        if (r == CLI_ARG_POS) {
            if (path != NULL)
                return cli_usage_error(ctx->cmd, "one FILE or DIR only");
            path = val;
        } else if (strcmp(name, "format") == 0) {
            rc = parse_mem_format(ctx->cmd, val, &f);
            have_format = 1;
        } else if (strcmp(name, "from") == 0) {
            if (strcmp(val, "markdown") != 0 && strcmp(val, "episodes") != 0 &&
                strcmp(val, "causal-graph") != 0 && strcmp(val, "ada") != 0)
                return cli_usage_error(ctx->cmd,
                                       "--from takes markdown, episodes, causal-graph or ada");
            from = val;
        } else if (strcmp(name, "category") == 0) {
            cat = val;
        } else if (strcmp(name, "namespace") == 0) {
            ns = val;
        } else if (strcmp(name, "json") == 0) {
            json = 1;
        } else if (strcmp(name, "force") == 0) {
            force = 1;
        } else if (strcmp(name, "recursive") == 0) {
            recursive = 1;
        } else if (strcmp(name, "scope") == 0) {
            scope = val;
        }
    }
    if (rc >= 0)
        return rc;
    if (path == NULL)
        return cli_usage_error(ctx->cmd, "missing %s",
                               from && strcmp(from, "causal-graph") != 0 ? "DIR" : "FILE");
    if ((from != NULL) == have_format)
        return cli_usage_error(ctx->cmd, "give either --format F FILE or --from SOURCE PATH");
    if (force && (from == NULL || strcmp(from, "episodes") != 0))
        return cli_usage_error(ctx->cmd, "--force is for --from episodes");
    if (recursive && (from == NULL || strcmp(from, "markdown") != 0))
        return cli_usage_error(ctx->cmd, "--recursive is for --from markdown");
    if (scope != NULL && (from == NULL || strcmp(from, "ada") != 0))
        return cli_usage_error(ctx->cmd, "--scope is for --from ada");
    if (from != NULL && strcmp(from, "ada") == 0) {
        if (cat != NULL || ns != NULL)
            return cli_usage_error(ctx->cmd, "--category and --namespace are for memories");
        return cli_import_ada(ctx, path, scope, json);
    }
    if (from != NULL && strcmp(from, "markdown") != 0) {
        /* reflexion: episodes and the causal graph (cmd_episode.c, cmd_causal.c) */
        if (cat != NULL || ns != NULL)
            return cli_usage_error(ctx->cmd, "--category and --namespace are for memories");
        return from[0] == 'e' ? cli_import_episodes(ctx, path, force, json)
                              : cli_import_causal_graph(ctx, path, json);
    }
    if (from == NULL && slurp(path, &data, &len) != 0)
        return cli_fail(ctx->cmd, CAIRN_EIO, "%s: %s", path, strerror(errno));
    if ((rc = cli_mem_open(ctx, 1, &db, &mem)) != CLI_EXIT_OK) {
        free(data);
        return rc;
    }
    if (from != NULL) {
        rc = import_markdown_dir(ctx, mem, path, cat, ns, recursive, json);
    } else {
        struct cli_busy *busy = cli_busy_start("importing (one commit)");
        r = cairn_mem_import(mem, f, data, len, ns, &imported, &skipped);
        cli_busy_end(busy);
        free(data); /* before the close, which may write the memory index */
        data = NULL;
        rc = r == CAIRN_OK ? CLI_EXIT_OK : cli_mem_fail(ctx, mem, r);
        if (rc == CLI_EXIT_OK)
            printf(json ? "{\"imported\":%llu,\"skipped\":%llu}\n"
                        : "imported: %llu\nskipped: %llu\n",
                   (unsigned long long)imported, (unsigned long long)skipped);
    }
    free(data);
    return cli_mem_close(ctx, db, mem, rc);
}

const char cmd_remember_help[] =
    "usage: cairn remember [--llm-cmd CMD] [--surprise X] [--importance X] [--category C]\n"
    "                      [--namespace NS] [--dry-run] [--explain] [--format text|json]\n"
    "                      [FILE|-]\n"
    "\n"
    "Ask an LLM which memories a conversation holds and store the novel ones.\n"
    "The conversation (FILE, or stdin) is a JSON array of {\"role\", \"content\"}.\n"
    "The LLM is `sh -c CMD` (--llm-cmd, else $CAIRN_LLM_CMD): it reads the\n"
    "prompt (README \"Remember\") on stdin and writes a JSON array of\n"
    "{\"content\", \"category\", \"importance\"} on stdout (a ``` fence around it is\n"
    "fine), exiting 0 within --embed-timeout. Each candidate whose novelty (1 -\n"
    "its highest similarity to a stored memory, by the embedder's vectors) is at\n"
    "least the surprise threshold is stored, in order (without an embedder, in\n"
    "a store without vectors: every candidate that is no exact duplicate). A\n"
    "malformed answer, or one whose text is not valid UTF-8 or holds a NUL (a\n"
    "byte, or \\u0000 in a string; README \"Text\"), is an error and stores\n"
    "nothing.\n"
    "\n"
    "Options:\n"
    "  --llm-cmd CMD   the LLM program (required, or $CAIRN_LLM_CMD)\n"
    "  --surprise X    novelty threshold, 0..1 (default 0.15)\n"
    "  --importance X  store every memory with this importance (default: the LLM's)\n"
    "  --category C    store every memory under this category (default: the LLM's)\n"
    "  --namespace NS  where to store and compare (default: the empty one)\n"
    "  --dry-run       decide, store nothing\n"
    "  --explain       one line per candidate: stored or not, novelty, why\n"
    "  --format F      text: \"stored: N\" and \"skipped: N\" (and the lines);\n"
    "                  json: {\"stored\", \"skipped\", \"candidates\": [...]}.\n"
    "                  A namespace the stores take past max-memories is pruned\n"
    "                  back as `cairn add` prunes: \"pruned: N (maxMemories)\"\n"
    "                  (json: \"pruned\": N)\n"
    "\n"
    "Exit status: 0 success; 1 no LLM, LLM failure, malformed answer, I/O error;\n"
    "64 usage error.\n";

/* The LLM callback of the tool: --llm-cmd through cli_proc_run. */
typedef struct cli_llm {
    const char *cmd;
    int timeout_ms;
} cli_llm;

static int llm_complete(void *user, const char *prompt, char **answer, char *err)
{
    cli_llm *l = user;
    size_t n = 0;
    int rc = cli_proc_run(l->cmd, prompt, strlen(prompt), l->timeout_ms, answer, &n, err);
    /* The answer goes on as a C string: a NUL byte would cut it unseen. */
    if (rc == 0 && strlen(*answer) != n) {
        snprintf(err, CAIRN_ERRMSG_MAX, "its answer holds a NUL byte at byte %zu",
                 strlen(*answer));
        free(*answer);
        *answer = NULL;
        rc = 1;
    }
    return rc;
}

/* The memories stores pruned past the limit (CAIRN_EVENT_PRUNED). */
static void count_prunes(void *user, const cairn_mem_event *ev)
{
    if (ev->kind == CAIRN_EVENT_PRUNED)
        *(uint64_t *)user += ev->pruned;
}

int cmd_remember(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"llm-cmd", 1},   {"surprise", 1}, {"importance", 1},
                                       {"category", 1},  {"namespace", 1}, {"dry-run", 0},
                                       {"explain", 0},   {"format", 1},   {NULL, 0}};
    cairn_remember_opts ro = CAIRN_REMEMBER_OPTS_INIT;
    cairn_remember_item *items = NULL;
    cli_llm lc;
    cairn_llm llm;
    const char *name, *val, *file = "-", *env = getenv("CAIRN_LLM_CMD");
    char *msgs = NULL;
    size_t len = 0, n = 0, stored = 0;
    uint64_t pruned = 0;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cli_args a;
    int r, rc = -1, json = 0, explain = 0;

    lc.cmd = env && env[0] ? env : NULL;
    lc.timeout_ms = ctx->embed_timeout_ms > 0 ? ctx->embed_timeout_ms : 30000;
    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            rc = CLI_EXIT_USAGE;
        else if (r == CLI_ARG_HELP)
            rc = cli_help(cmd_remember_help);
        else if (r == CLI_ARG_POS)
            file = val;
        else if (strcmp(name, "llm-cmd") == 0)
            lc.cmd = val;
        else if (strcmp(name, "surprise") == 0)
            rc = parse_unit(ctx->cmd, "--surprise", val, &ro.surprise);
        else if (strcmp(name, "importance") == 0)
            rc = parse_unit(ctx->cmd, "--importance", val, &ro.importance);
        else if (strcmp(name, "category") == 0)
            ro.category = val;
        else if (strcmp(name, "namespace") == 0)
            ro.ns = val;
        else if (strcmp(name, "dry-run") == 0)
            ro.dry_run = 1;
        else if (strcmp(name, "explain") == 0)
            explain = 1;
        else if (strcmp(name, "format") == 0)
            rc = cli_parse_format(ctx->cmd, val, &json);
    }
    if (rc >= 0)
        return rc;
    if (slurp(file, &msgs, &len) != 0)
        return cli_fail(ctx->cmd, CAIRN_EIO, "%s: %s", file, strerror(errno));
    if ((rc = cli_mem_open(ctx, 1, &db, &mem)) != CLI_EXIT_OK) {
        free(msgs);
        return rc;
    }
    llm.user = &lc;
    llm.complete = llm_complete;
    (void)cairn_mem_on(mem, count_prunes, &pruned); /* a fresh handle: room for it */
    r = cairn_mem_remember(mem, lc.cmd ? &llm : NULL, msgs, len, &ro, &items, &n);
    free(msgs);
    if (r != CAIRN_OK)
        return cli_mem_close(ctx, db, mem, cli_mem_fail(ctx, mem, r));
    for (size_t i = 0; i < n; i++)
        stored += items[i].stored != 0;
    if (json) {
        cJSON *o = cJSON_CreateObject(), *arr;
        cJSON_AddNumberToObject(o, "stored", (double)stored);
        cJSON_AddNumberToObject(o, "skipped", (double)(n - stored));
        cJSON_AddBoolToObject(o, "dryRun", ro.dry_run);
        if (pruned > 0)
            cli_json_add_int(o, "pruned", (int64_t)pruned);
        arr = cJSON_AddArrayToObject(o, "candidates");
        for (size_t i = 0; i < n; i++) {
            cJSON *c = cJSON_CreateObject();
            cJSON_AddStringToObject(c, "content", items[i].content);
            cJSON_AddStringToObject(c, "category", items[i].category);
            cJSON_AddNumberToObject(c, "importance", items[i].importance);
            cJSON_AddNumberToObject(c, "novelty", items[i].novelty);
            if (items[i].nearest[0])
                cJSON_AddStringToObject(c, "nearest", items[i].nearest);
            cJSON_AddBoolToObject(c, "stored", items[i].stored);
            if (items[i].stored)
                cJSON_AddStringToObject(c, "id", items[i].id);
            cJSON_AddStringToObject(c, "why", items[i].why ? items[i].why : "");
            cJSON_AddItemToArray(arr, c);
        }
        print_json(o);
    } else {
        for (size_t i = 0; explain && i < n; i++)
            printf("%s  novelty %.4f  %s  [%s] %s%s%s\n", items[i].stored ? "stored " : "skipped",
                   items[i].novelty, items[i].why ? items[i].why : "", items[i].category,
                   items[i].content, items[i].stored ? "  " : "", items[i].id);
        printf("stored: %zu\nskipped: %zu\n", stored, n - stored);
        if (pruned > 0)
            printf("pruned: %llu (maxMemories)\n", (unsigned long long)pruned);
    }
    cairn_remember_free(items, n);
    return cli_mem_close(ctx, db, mem, CLI_EXIT_OK);
}
