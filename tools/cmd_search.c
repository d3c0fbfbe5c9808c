/*
 * cmd_search.c - `cairn search` (the Search-Memory skill:
 * validation, JSON or table output, errors as JSON) and `cairn status`
 * (Get-MemoryRouterStatus).
 *
 * Search only reads: it opens the store read-only, ranks by relevance alone
 * (the best match scoring 1.0) and records no access. A unified search
 * fuses BM25 and vector similarity (as recall does); --semantic-only fails
 * with Search-Memory's error when there is no embedder or no vector stored.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli_embed.h"
#include "commands.h"
#include "sha256.h"

const char cmd_search_help[] =
    "usage: cairn search QUERY [--max-results N] [--lexical-only | --semantic-only]\n"
    "                    [--format json|table] [--namespace NS[,NS...]]\n"
    "\n"
    "Search memories by relevance, read-only, as the Search-Memory skill does.\n"
    "QUERY: 1-500 characters of letters, digits, whitespace and - . , _ ( ) & :\n"
    "--max-results: 1-100 (default 10). --lexical-only and --semantic-only\n"
    "exclude each other. Unified (the default) fuses BM25 and vector similarity\n"
    "(the embedder of the global options; lexical alone when the store has no\n"
    "vectors, said in Diagnostic); --semantic-only fails when there is no\n"
    "embedder (--no-embed) or no vector stored.\n"
    "\n"
    "Output (json, the default): {\"Query\", \"Count\", \"Source\" (Unified,\n"
    "Lexical or Semantic), \"Results\": [{\"Name\", \"Source\" (Lexical, Semantic or\n"
    "Both: which side found it), \"Score\", \"Path\", \"Content\", \"Hash\"}],\n"
    "\"Diagnostic\"}. Name is the memory's metadata \"name\" or its id;\n"
    "Path its metadata \"path\" or null; Score its relevance relative to the best\n"
    "match (1.0); Hash the SHA-256 of Content (64 lowercase hex digits).\n"
    "Diagnostic: LexicalAvailable, SemanticAvailable, StorePath, MemoryCount\n"
    "(the live memories of every namespace; an expired one counts until\n"
    "`forget` removes it), VectorCount, Embedder.\n"
    "table: Name, Source, Score and a preview. Errors: {\"Error\", \"Query\",\n"
    "\"Details\"} on stdout, exit 1.\n"
    "\n"
    "Exit status: 0 success; 1 an error (JSON on stdout says which).\n";

const char cmd_status_help[] =
    "usage: cairn status\n"
    "\n"
    "The search router's status (Get-MemoryRouterStatus) as JSON: Lexical\n"
    "{Available, Path}, Semantic {Available (vectors are stored), Embedder (their\n"
    "embedder, or null), Dimensions, VectorCount}, Configuration\n"
    "{StorePath, MaxResults, Stemmer, MemoryCount (the live memories of every\n"
    "namespace; an expired one counts until `forget` removes it)}.\n"
    "\n"
    "Exit status: 0 success; 1 no store or I/O error.\n";

/* Search-Memory's error object on stdout; returns CLI_EXIT_FAIL. */
static int search_error(const char *error, const char *query, const char *details)
{
    cJSON *o = cJSON_CreateObject();
    char *s;
    cJSON_AddStringToObject(o, "Error", error);
    if (query != NULL)
        cJSON_AddStringToObject(o, "Query", query);
    else
        cJSON_AddNullToObject(o, "Query");
    cJSON_AddStringToObject(o, "Details", details);
    s = cJSON_Print(o);
    if (s != NULL)
        printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
    return CLI_EXIT_FAIL;
}

/* Query validation of Search-Memory: 1-500 characters matching
 * ^[a-zA-Z0-9\s\-.,_()&:]+$ (\s as in .NET: ASCII whitespace here). */
static int query_ok(const char *q)
{
    size_t n = strlen(q);
    if (n < 1 || n > 500)
        return 0;
    for (; *q; q++) {
        unsigned char c = (unsigned char)*q;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == ' ' || (c >= '\t' && c <= '\r') || strchr("-.,_()&:", c) != NULL))
            return 0;
    }
    return 1;
}

static const char *meta_str(const cJSON *meta, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *source_name(unsigned src)
{
    if (src == (CAIRN_SOURCE_LEXICAL | CAIRN_SOURCE_SEMANTIC))
        return "Both";
    return src == CAIRN_SOURCE_SEMANTIC ? "Semantic" : "Lexical";
}

int cmd_search(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"max-results", 1}, {"lexical-only", 0},
                                       {"semantic-only", 0}, {"format", 1},
                                       {"namespace", 1}, {NULL, 0}};
    const char *name, *val, *query = NULL, *fmt = "json", *nsarg = NULL;
    int lexical = 0, semantic = 0, r;
    uint64_t max = 10;
    cairn_mem_options mo = CAIRN_MEM_OPTIONS_INIT;
    cairn_recall_opts ro = CAIRN_RECALL_OPTS_INIT;
    uint64_t count = 0;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cairn_recall_hit *h = NULL;
    size_t n = 0, nns = 0;
    const char *nslist[64];
    char *nsbuf = NULL;
    cli_args a;
    cJSON *out, *results, *diag;
    cli_embedder emb;
    char vname[CAIRN_EMBEDDER_NAME_MAX + 1] = "";
    uint64_t nvec = 0;
    int sem_ok = 0;

    memset(&emb, 0, sizeof emb);
    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return search_error("Invalid arguments", query, "see cairn search --help");
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_search_help);
        if (r == CLI_ARG_POS) {
            if (query != NULL)
                return search_error("One query only (quote it)", query, val);
            query = val;
        } else if (strcmp(name, "max-results") == 0) {
            if (cli_parse_u64(val, 100, &max) != 0 || max < 1)
                return search_error("Cannot validate argument on parameter 'MaxResults'. "
                                    "The argument is not in the range 1-100.",
                                    query, val);
        } else if (strcmp(name, "lexical-only") == 0) {
            lexical = 1;
        } else if (strcmp(name, "semantic-only") == 0) {
            semantic = 1;
        } else if (strcmp(name, "format") == 0) {
            if (strcmp(val, "json") != 0 && strcmp(val, "table") != 0)
                return search_error("Cannot validate argument on parameter 'Format'. "
                                    "Allowed values: json, table.",
                                    query, val);
            fmt = val;
        } else {
            nsarg = val;
        }
    }
    if (query == NULL || !query_ok(query))
        return search_error("Cannot validate argument on parameter 'Query'. The query must be "
                            "1-500 characters of letters, digits, whitespace and - . , _ ( ) "
                            "& :",
                            query, "pattern ^[a-zA-Z0-9\\s\\-.,_()&:]+$");
    if (lexical && semantic)
        return search_error("Cannot specify both --semantic-only and --lexical-only", query,
                            "the two switches exclude each other");
    if (nsarg != NULL) {
        char *save = NULL;
        nsbuf = strdup(nsarg);
        for (char *t = nsbuf ? strtok_r(nsbuf, ",", &save) : NULL; t && nns < 64;
             t = strtok_r(NULL, ",", &save))
            nslist[nns++] = t;
        ro.ns = nslist;
        ro.n_ns = nns;
    }
    if (cli_open_read(ctx, &db) != CAIRN_OK) {
        free(nsbuf);
        return search_error("No store", query, ctx->store);
    }
    mo.w_relevance = 1.0; /* relevance alone */
    ro.k = (size_t)max;
    ro.no_access = 1; /* a search only looks */
    ro.mode = lexical ? CAIRN_RECALL_LEXICAL : semantic ? CAIRN_RECALL_SEMANTIC : CAIRN_RECALL_HYBRID;
    r = cairn_mem_open(db, &mo, &mem);
    if (r == CAIRN_OK && !lexical) {
        /* a store of another embedder: no semantic side, said below */
        if (cli_embedder_attach(ctx, mem, &emb, 1) != CLI_EXIT_OK) {
            cairn_mem_close(mem);
            cairn_close(db);
            free(nsbuf);
            return search_error("Semantic search is not available", query,
                                "the embedder failed (see above)");
        }
        cairn_mem_vectors(mem, vname, NULL, &nvec);
        sem_ok = emb.e.dim != 0 && nvec > 0;
        if (semantic && !sem_ok) {
            cairn_mem_close(mem);
            cli_embedder_done(&emb);
            cairn_close(db);
            free(nsbuf);
            return search_error("Semantic search is not available and --semantic-only was "
                                "specified",
                                query, nvec == 0 ? "this store has no vectors; use --lexical-only"
                                                 : "no embedder for this store's vectors (see "
                                                   "--embed-cmd, --embed-name); use --lexical-only");
        }
    }
    if (r == CAIRN_OK)
        r = cairn_mem_recall(mem, query, &ro, &h, &n);
    if (r == CAIRN_OK)
        r = cairn_mem_count(mem, &count);
    if (r != CAIRN_OK) {
        char code[32];
        search_error("Search failed", query, mem && cairn_mem_errmsg(mem)[0]
                                                 ? cairn_mem_errmsg(mem)
                                                 : cli_code_name(r, code, sizeof code));
        cairn_recall_free(h, n);
        cairn_mem_close(mem);
        cli_embedder_done(&emb);
        cairn_close(db);
        free(nsbuf);
        return CLI_EXIT_FAIL;
    }
    out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "Query", query);
    cJSON_AddNumberToObject(out, "Count", (double)n);
    cJSON_AddStringToObject(out, "Source", lexical ? "Lexical" : semantic ? "Semantic" : "Unified");
    results = cJSON_AddArrayToObject(out, "Results");
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject(), *meta = cJSON_Parse(h[i].mem.metadata);
        const char *nm = meta_str(meta, "name"), *path = meta_str(meta, "path");
        char hex[65];
        sha256_hex(h[i].mem.content, strlen(h[i].mem.content), hex);
        cJSON_AddStringToObject(o, "Name", nm ? nm : h[i].mem.id);
        cJSON_AddStringToObject(o, "Source", source_name(h[i].source));
        cJSON_AddNumberToObject(o, "Score", h[i].relevance);
        if (path != NULL)
            cJSON_AddStringToObject(o, "Path", path);
        else
            cJSON_AddNullToObject(o, "Path");
        cJSON_AddStringToObject(o, "Content", h[i].mem.content);
        cJSON_AddStringToObject(o, "Hash", hex);
        cJSON_AddItemToArray(results, o);
        cJSON_Delete(meta);
    }
    diag = cJSON_AddObjectToObject(out, "Diagnostic");
    cJSON_AddBoolToObject(diag, "LexicalAvailable", 1);
    cJSON_AddBoolToObject(diag, "SemanticAvailable", sem_ok);
    cJSON_AddStringToObject(diag, "StorePath", ctx->store);
    cJSON_AddNumberToObject(diag, "MemoryCount", (double)count);
    cJSON_AddNumberToObject(diag, "VectorCount", (double)nvec);
    if (sem_ok)
        cJSON_AddStringToObject(diag, "Embedder", vname);
    else
        cJSON_AddNullToObject(diag, "Embedder");
    if (strcmp(fmt, "json") == 0) {
        char *s = cJSON_Print(out);
        if (s != NULL)
            printf("%s\n", s);
        free(s);
    } else {
        printf("%-32s %-8s %-6s %s\n%-32s %-8s %-6s %s\n", "Name", "Source", "Score", "Preview",
               "----", "------", "-----", "-------");
        for (size_t i = 0; i < n; i++) {
            const cJSON *o = cJSON_GetArrayItem(results, (int)i);
            const char *nm = cJSON_GetObjectItem(o, "Name")->valuestring;
            const char *c = h[i].mem.content;
            int w = (int)strcspn(c, "\r\n"), cut = w > 40 ? 40 : w;
            while (cut > 0 && cut < w && ((unsigned char)c[cut] & 0xC0) == 0x80)
                cut--;
            printf("%-32.32s %-8s %-6.2f %.*s%s\n", nm, source_name(h[i].source), h[i].relevance, cut, c,
                   cut < w || c[w] ? "..." : "");
        }
    }
    cJSON_Delete(out);
    cairn_recall_free(h, n);
    cairn_mem_close(mem);
    cli_embedder_done(&emb);
    cairn_close(db);
    free(nsbuf);
    return CLI_EXIT_OK;
}

int cmd_status(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{NULL, 0}};
    const char *name, *val;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    uint64_t count = 0;
    cli_args a;
    cJSON *o, *x;
    char *s, vname[CAIRN_EMBEDDER_NAME_MAX + 1];
    uint32_t vdim = 0;
    uint64_t nvec = 0;
    int r;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_status_help);
        return cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
    }
    if (cli_open_read(ctx, &db) != CAIRN_OK)
        return CLI_EXIT_FAIL;
    r = cairn_mem_open(db, NULL, &mem);
    if (r == CAIRN_OK)
        r = cairn_mem_count(mem, &count);
    if (r != CAIRN_OK) {
        cairn_mem_close(mem);
        r = cli_fail_db(ctx->cmd, db, r, "opening memories");
        cairn_close(db);
        return r;
    }
    o = cJSON_CreateObject();
    x = cJSON_AddObjectToObject(o, "Lexical");
    cJSON_AddBoolToObject(x, "Available", 1);
    cJSON_AddStringToObject(x, "Path", ctx->store);
    cairn_mem_vectors(mem, vname, &vdim, &nvec);
    x = cJSON_AddObjectToObject(o, "Semantic");
    cJSON_AddBoolToObject(x, "Available", nvec > 0);
    if (vdim != 0) {
        cJSON_AddStringToObject(x, "Embedder", vname);
        cJSON_AddNumberToObject(x, "Dimensions", vdim);
    } else {
        cJSON_AddNullToObject(x, "Embedder");
    }
    cJSON_AddNumberToObject(x, "VectorCount", (double)nvec);
    x = cJSON_AddObjectToObject(o, "Configuration");
    cJSON_AddStringToObject(x, "StorePath", ctx->store);
    cJSON_AddNumberToObject(x, "MaxResults", 10);
    cJSON_AddStringToObject(x, "Stemmer", "english");
    cJSON_AddNumberToObject(x, "MemoryCount", (double)count);
    s = cJSON_Print(o);
    if (s != NULL)
        printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
    cairn_mem_close(mem);
    cairn_close(db);
    return CLI_EXIT_OK;
}
