/*
 * cmd_causal.c - `cairn causal node|edge|path|update|status` (ReflexionMemory's
 * Add-CausalNode, Add-CausalEdge, Get-CausalPath, Update-CausalGraph.ps1,
 * Get-ReflexionMemoryStatus) and `cairn import --from causal-graph FILE`,
 * over the cairn_causal_* API. Patterns are in cmd_pattern.c.
 *
 * ReflexionMemory keeps the graph in .agents/memory/causality/causal-graph.json;
 * here every change is a record of the store's log and the graph is their
 * fold (with a graph file as its checkpoint). --format json prints the
 * ReflexionMemory's objects with its field names (nodes: id, type, label, episodes,
 * frequency, success_rate; edges: source, target, type, weight,
 * evidence_count), plus "created" (and the "episodes" of edges) as
 * causal-graph.json holds them; times are ISO 8601.
 *
 * Reads (path, status, update --dry-run) open the store read-only; the
 * others take the writer lock.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli_asof.h"
#include "cli_json.h"
#include "cli_reflex.h"
#include "render.h"

const char cmd_causal_help[] =
    "usage: cairn causal node --type T --label L [--episode-id E]\n"
    "       cairn causal edge --source-id A --target-id B --type T [--weight W]\n"
    "                         [--episode-id E]\n"
    "       cairn causal path --from-label A --to-label B [--max-depth N]\n"
    "       cairn causal update [--since TIME] [--dry-run]\n"
    "       cairn causal status\n"
    "       (each also takes --format text|json and --store DIR)\n"
    "\n"
    "The causal graph: nodes (decisions, events, outcomes, patterns, errors),\n"
    "edges between them (causes, enables, prevents, correlates) with a weight\n"
    "averaged over their evidence, kept in the store's log.\n"
    "  node    add a node, or count it again if its label exists\n"
    "  edge    add an edge, or average its weight if it exists\n"
    "  path    the shortest path between two labels\n"
    "  update  fold stored episodes into nodes, edges and patterns\n"
    "  status  counts and files (Get-ReflexionMemoryStatus)\n"
    "Run `cairn help causal SUBCOMMAND` for its options. See also `cairn pattern`\n"
    "and `cairn import --from causal-graph`.\n"
    "\n"
    "Exit status: 0 success (also when path finds no path); 1 the operation\n"
    "failed (unknown node id, no store, I/O error, store locked); 64 usage\n"
    "error (unknown or missing subcommand or option, a value out of range).\n";

static const char node_help[] =
    "usage: cairn causal node --type T --label L [--episode-id E]\n"
    "                         [--format text|json]\n"
    "\n"
    "Add a node to the causal graph (Add-CausalNode) and print it. A node with\n"
    "exactly this label exists already: its frequency goes up by one and E\n"
    "joins its episodes (once). The id comes from the label (\"n\" + 16 hex\n"
    "digits): the same label has the same id in every store.\n"
    "\n"
    "Options:\n"
    "  --type T         decision, event, outcome, pattern or error (ReflexionMemory's),\n"
    "                   or an event type: tool_call, commit, milestone, test,\n"
    "                   handoff (required)\n"
    "  --label L        the label, 1..4096 bytes (required)\n"
    "  --episode-id E   the episode it comes from\n"
    "  --format F       text (default: \"key: value\" lines) or json: {id, type,\n"
    "                   label, episodes, frequency, success_rate, created}\n"
    "\n"
    "Exit status: 0 added; 1 invalid value, I/O error, store locked; 64 usage\n"
    "error.\n";

static const char edge_help[] =
    "usage: cairn causal edge --source-id A --target-id B --type T [--weight W]\n"
    "                         [--episode-id E] [--format text|json]\n"
    "\n"
    "Add an edge between two existing nodes (Add-CausalEdge) and print it. The\n"
    "same (source, target, type) exists already: its weight becomes the running\n"
    "average of every weight added, and evidence_count goes up by one.\n"
    "\n"
    "Options:\n"
    "  --source-id A    the id of the node it leaves (required)\n"
    "  --target-id B    the id of the node it reaches (required)\n"
    "  --type T         causes, enables, prevents or correlates (required)\n"
    "  --weight W       confidence, 0-1 (default 0.5)\n"
    "  --episode-id E   the episode that is its evidence\n"
    "  --format F       text (default: \"key: value\" lines) or json: {source,\n"
    "                   target, type, weight, evidence_count, episodes, created}\n"
    "\n"
    "Exit status: 0 added; 1 no node with such an id (CAIRN_ENOTFOUND), I/O\n"
    "error, store locked; 64 usage error.\n";

static const char path_help[] =
    "usage: cairn causal path --from-label A --to-label B [--max-depth N]\n"
    "                         [--format text|json]\n"
    "\n"
    "Find a shortest causal path (Get-CausalPath: breadth-first along edges,\n"
    "each node visited once, so cycles end) from the first node whose label\n"
    "contains A to the first whose label contains B (case-insensitive; first =\n"
    "earliest created). Not finding one is not an error: found is false and\n"
    "error says why (\"Node not found\", \"No path found within depth N\"), exit\n"
    "0. Opens the store read-only.\n"
    "\n"
    "Options:\n"
    "  --from-label A   part of the label of the start (required)\n"
    "  --to-label B     part of the label of the end (required)\n"
    "  --max-depth N    at most N edges, 1-10 (default 5)\n"
    "  --format F       text (default): found, depth (or error), then one line\n"
    "                   per node on the path; json: {found, path: [nodes], depth}\n"
    "                   or {found, path: [], error}\n"
    AS_OF_HELP
    "\n"
    "Exit status: 0 searched (found or not); 1 no store, I/O error; 64 usage\n"
    "error.\n";

static const char update_help[] =
    "usage: cairn causal update [--since TIME] [--dry-run] [--format text|json]\n"
    "\n"
    "Fold every stored episode that was not folded yet into the causal graph\n"
    "(Update-CausalGraph.ps1): nodes of its decisions, events and outcome, edges\n"
    "between them, patterns of its decisions; in one commit. Running it again\n"
    "adds nothing. Prints the statistics: episodes_processed, nodes_added,\n"
    "edges_added, patterns_added (new ones only).\n"
    "\n"
    "Options:\n"
    "  --since TIME     only episodes with a timestamp at or after TIME: ISO 8601,\n"
    "                   @<epoch ms>, or an age (7d, 12h)\n"
    "  --dry-run        count what would be added, change nothing (read-only)\n"
    "  --format F       text (default: \"key: value\" lines) or json\n"
    "\n"
    "Exit status (ReflexionMemory's): 0 success, or no episode to process; 1 error (no\n"
    "store for --dry-run, I/O error, store locked); 64 usage error.\n";

static const char status_help[] =
    "usage: cairn causal status [--format text|json]\n"
    "\n"
    "The reflexion state (Get-ReflexionMemoryStatus). Opens the store read-only.\n"
    "\n"
    "Output (json): {\"Episodes\": {Path, Count}, \"CausalGraph\": {Path, Version,\n"
    "Updated, Nodes, Edges, Patterns, File, CoveredSeq, RecordsAfter,\n"
    "EpisodesProcessed, Skipped}, \"Configuration\": {EpisodesPath,\n"
    "CausalityPath}}. Episodes live in the store's log, so Episodes.Path and\n"
    "both Configuration paths are the store directory; CausalGraph.Path is the\n"
    "graph file in use (null before the first checkpoint), File its name,\n"
    "CoveredSeq the last record it holds, RecordsAfter the graph records\n"
    "folded in RAM after it; Version is ReflexionMemory's causal-graph schema (\"1.0\",\n"
    "what import reads); Updated the time of the last graph change (null if\n"
    "none); EpisodesProcessed the episodes folded in by updates; Skipped the\n"
    "records that could not be applied. Text: the same as \"key: value\" lines.\n"
    AS_OF_HELP
    "\n"
    "Exit status: 0 success; 1 no store, I/O error; 64 usage error.\n";

/* ---- JSON of nodes and edges --------------------------------- */

static const char *node_type(unsigned t)
{
    const char *s = cairn_node_type_name(t);
    return s ? s : "unknown";
}

/* ---- node, edge ------------------------------------------------------------------ */

static int node_type_error(const char *cmd, const char *v)
{
    char names[256] = "";
    for (unsigned t = 0; t < CAIRN_NODE_TYPES; t++) {
        const char *s = cairn_node_type_name(t);
        if (s == NULL)
            continue;
        if (names[0])
            strncat(names, ",", sizeof names - strlen(names) - 1);
        strncat(names, s, sizeof names - strlen(names) - 1);
    }
    return cli_usage_error(cmd,
                           "--type: Cannot validate argument on parameter 'Type'. The argument "
                           "'%s' does not belong to the set '%s'.",
                           v, names);
}

static int causal_node(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {
        {"type", 1}, {"label", 1}, {"episode-id", 1}, {"format", 1}, {NULL, 0}};
    const char *name, *val, *label = NULL, *episode = NULL, *tname = NULL;
    cairn_causal_node n;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    unsigned type = 0;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (cli_reflex_arg(ctx, x, name, val, node_help, &json, &rc))
            continue;
        if (strcmp(name, "type") == 0)
            rc = cairn_node_type_parse(tname = val, &type) == CAIRN_OK
                     ? -1 : node_type_error(ctx->cmd, val);
        else if (strcmp(name, "label") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, label = val);
        else if (strcmp(name, "episode-id") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, episode = val);
    }
    if (rc < 0 && tname == NULL)
        rc = cli_opt_missing(ctx->cmd, "type");
    if (rc < 0 && label == NULL)
        rc = cli_opt_missing(ctx->cmd, "label");
    if (rc >= 0)
        return rc;
    if ((rc = cli_reflex_open(ctx, 1, &db, &r)) != CLI_EXIT_OK)
        return rc;
    memset(&n, 0, sizeof n);
    x = cairn_causal_add_node(r, type, label, episode, &n);
    if (x != CAIRN_OK) {
        rc = cli_reflex_fail(ctx, r, x, NULL);
    } else {
        cli_emit(cairn__json_node(&n), json);
        cairn_causal_node_clear(&n);
    }
    return cli_reflex_close(ctx, db, r, rc);
}

static int causal_edge(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"source-id", 1}, {"target-id", 1}, {"type", 1},
                                       {"weight", 1},    {"episode-id", 1}, {"format", 1},
                                       {NULL, 0}};
    const char *name, *val, *src = NULL, *dst = NULL, *episode = NULL, *tname = NULL;
    cairn_causal_edge e;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    unsigned type = 0;
    double weight = 0.5;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (cli_reflex_arg(ctx, x, name, val, edge_help, &json, &rc))
            continue;
        if (strcmp(name, "source-id") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, src = val);
        else if (strcmp(name, "target-id") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, dst = val);
        else if (strcmp(name, "type") == 0)
            rc = cairn_edge_type_parse(tname = val, &type) == CAIRN_OK
                     ? -1
                     : cli_usage_error(ctx->cmd,
                                       "--type: Cannot validate argument on parameter 'Type'. "
                                       "The argument '%s' does not belong to the set "
                                       "'causes,enables,prevents,correlates'.",
                                       val);
        else if (strcmp(name, "weight") == 0)
            rc = cli_opt_double(ctx->cmd, name, val, 0.0, 1.0, &weight);
        else if (strcmp(name, "episode-id") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, episode = val);
    }
    if (rc < 0 && src == NULL)
        rc = cli_opt_missing(ctx->cmd, "source-id");
    if (rc < 0 && dst == NULL)
        rc = cli_opt_missing(ctx->cmd, "target-id");
    if (rc < 0 && tname == NULL)
        rc = cli_opt_missing(ctx->cmd, "type");
    if (rc >= 0)
        return rc;
    if ((rc = cli_reflex_open(ctx, 1, &db, &r)) != CLI_EXIT_OK)
        return rc;
    memset(&e, 0, sizeof e);
    x = cairn_causal_add_edge(r, src, dst, type, weight, episode, &e);
    if (x != CAIRN_OK) {
        rc = cli_reflex_fail(ctx, r, x, NULL);
    } else {
        cli_emit(cairn__json_edge(&e), json);
        cairn_causal_edge_clear(&e);
    }
    return cli_reflex_close(ctx, db, r, rc);
}

/* ---- path ------------------------------------------------------------------------- */

static int causal_path(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {
        {"from-label", 1}, {"to-label", 1}, {"max-depth", 1}, {"format", 1}, {NULL, 0}};
    const char *name, *val, *from = NULL, *to = NULL;
    cairn_causal_path p;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    uint64_t depth = 5;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (cli_reflex_arg(ctx, x, name, val, path_help, &json, &rc))
            continue;
        if (strcmp(name, "from-label") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, from = val);
        else if (strcmp(name, "to-label") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, to = val);
        else if (strcmp(name, "max-depth") == 0)
            rc = cli_opt_uint(ctx->cmd, name, val, 1, 10, &depth);
    }
    if (rc < 0 && from == NULL)
        rc = cli_opt_missing(ctx->cmd, "from-label");
    if (rc < 0 && to == NULL)
        rc = cli_opt_missing(ctx->cmd, "to-label");
    if (rc >= 0)
        return rc;
    if ((rc = cli_reflex_open(ctx, 0, &db, &r)) != CLI_EXIT_OK)
        return rc;
    memset(&p, 0, sizeof p);
    x = cairn_causal_path_find(r, from, to, (unsigned)depth, &p);
    if (x != CAIRN_OK) {
        rc = cli_reflex_fail(ctx, r, x, NULL);
    } else if (json) {
        cJSON *o = cJSON_CreateObject(), *arr;
        cJSON_AddBoolToObject(o, "found", p.found);
        arr = cJSON_AddArrayToObject(o, "path");
        for (size_t i = 0; p.found && i < p.n; i++)
            cJSON_AddItemToArray(arr, cairn__json_node(&p.path[i]));
        if (p.found)
            cJSON_AddNumberToObject(o, "depth", p.depth);
        else
            cJSON_AddStringToObject(o, "error", p.error);
        cli_print_cjson(o);
    } else if (p.found) {
        printf("found: true\ndepth: %u\n", p.depth);
        for (size_t i = 0; i < p.n; i++)
            printf("%s %s  [%s]  %s\n", i ? "->" : "  ", p.path[i].id, node_type(p.path[i].type),
                   p.path[i].label);
    } else {
        printf("found: false\nerror: %s\n", p.error);
    }
    if (x == CAIRN_OK)
        cairn_causal_path_clear(&p);
    return cli_reflex_close(ctx, db, r, rc);
}

/* ---- update, status ----------------------------------------------------------------- */

static int causal_update(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"since", 1}, {"dry-run", 0}, {"format", 1}, {NULL, 0}};
    cairn_causal_update_opts o = CAIRN_CAUSAL_UPDATE_INIT;
    cairn_causal_update_stats st;
    const char *name, *val;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (cli_reflex_arg(ctx, x, name, val, update_help, &json, &rc))
            continue;
        if (strcmp(name, "since") == 0)
            rc = cli_opt_time(ctx->cmd, name, val, &o.since_ms);
        else if (strcmp(name, "dry-run") == 0)
            o.dry_run = 1;
    }
    if (rc >= 0)
        return rc;
    if ((rc = cli_reflex_open(ctx, !o.dry_run, &db, &r)) != CLI_EXIT_OK)
        return rc;
    memset(&st, 0, sizeof st);
    x = cairn_causal_update(r, &o, &st);
    if (x != CAIRN_OK) {
        rc = cli_reflex_fail(ctx, r, x, NULL);
    } else {
        cJSON *j = cJSON_CreateObject();
        cli_json_add_int(j, "episodes_processed", (int64_t)st.episodes_processed);
        cli_json_add_int(j, "nodes_added", (int64_t)st.nodes_added);
        cli_json_add_int(j, "edges_added", (int64_t)st.edges_added);
        cli_json_add_int(j, "patterns_added", (int64_t)st.patterns_added);
        if (!json)
            cJSON_AddStringToObject(j, "dry_run", o.dry_run ? "yes (nothing written)" : "no");
        cli_emit(j, json);
    }
    return cli_reflex_close(ctx, db, r, rc);
}

static int causal_status(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {NULL, 0}};
    cairn_reflex_status st;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    int x, json = 0;
    int rc = cli_output_args(ctx, spec, argc, argv, status_help, &json);
    char *file = NULL, t[40] = "";

    if (rc >= 0)
        return rc;
    if ((rc = cli_reflex_open(ctx, 0, &db, &r)) != CLI_EXIT_OK)
        return rc;
    memset(&st, 0, sizeof st);
    x = cairn_reflex_status_get(r, &st);
    if (x != CAIRN_OK)
        return cli_reflex_close(ctx, db, r, cli_reflex_fail(ctx, r, x, NULL));
    if (st.graph_file[0]) {
        size_t n = strlen(ctx->store) + strlen(st.graph_file) + 2;
        if ((file = malloc(n)) != NULL)
            snprintf(file, n, "%s/%s", ctx->store, st.graph_file);
    }
    if (st.updated_ms != 0)
        cli_format_time(st.updated_ms, t, sizeof t);
    if (json) {
        cJSON *o = cJSON_CreateObject(), *e, *g, *c;
        e = cJSON_AddObjectToObject(o, "Episodes");
        cJSON_AddStringToObject(e, "Path", ctx->store);
        cli_json_add_int(e, "Count", (int64_t)st.episodes);
        g = cJSON_AddObjectToObject(o, "CausalGraph");
        if (file != NULL)
            cJSON_AddStringToObject(g, "Path", file);
        else
            cJSON_AddNullToObject(g, "Path");
        /* ReflexionMemory's causal-graph.json schema version: what the graph
         * corresponds to, and what `import --from causal-graph` reads. */
        cJSON_AddStringToObject(g, "Version", "1.0");
        if (t[0])
            cJSON_AddStringToObject(g, "Updated", t);
        else
            cJSON_AddNullToObject(g, "Updated");
        cli_json_add_int(g, "Nodes", (int64_t)st.nodes);
        cli_json_add_int(g, "Edges", (int64_t)st.edges);
        cli_json_add_int(g, "Patterns", (int64_t)st.patterns);
        if (st.graph_file[0])
            cJSON_AddStringToObject(g, "File", st.graph_file);
        else
            cJSON_AddNullToObject(g, "File");
        cli_json_add_int(g, "CoveredSeq", (int64_t)st.graph_covered);
        cli_json_add_int(g, "RecordsAfter", (int64_t)st.delta_records);
        cli_json_add_int(g, "EpisodesProcessed", (int64_t)st.processed);
        cli_json_add_int(g, "Skipped", (int64_t)st.skipped);
        c = cJSON_AddObjectToObject(o, "Configuration");
        cJSON_AddStringToObject(c, "EpisodesPath", ctx->store);
        cJSON_AddStringToObject(c, "CausalityPath", ctx->store);
        cli_print_cjson(o);
    } else {
        printf("%-19s %llu\n", "episodes:", (unsigned long long)st.episodes);
        printf("%-19s %llu\n", "nodes:", (unsigned long long)st.nodes);
        printf("%-19s %llu\n", "edges:", (unsigned long long)st.edges);
        printf("%-19s %llu\n", "patterns:", (unsigned long long)st.patterns);
        printf("%-19s %s\n", "updated:", t[0] ? t : "never");
        printf("%-19s %llu\n", "episodes processed:", (unsigned long long)st.processed);
        if (file != NULL)
            printf("%-19s %s (covers seq %llu; %llu records after it)\n", "graph file:", file,
                   (unsigned long long)st.graph_covered, (unsigned long long)st.delta_records);
        else
            printf("%-19s none (%llu records folded at open)\n", "graph file:",
                   (unsigned long long)st.delta_records);
        printf("%-19s %llu\n", "skipped records:", (unsigned long long)st.skipped);
        printf("%-19s %s\n", "store:", ctx->store);
    }
    free(file);
    return cli_reflex_close(ctx, db, r, CLI_EXIT_OK);
}

int cmd_causal(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_subcmd subs[] = {
        {"node", "causal node", node_help, causal_node},
        {"edge", "causal edge", edge_help, causal_edge},
        {"path", "causal path", path_help, causal_path},
        {"update", "causal update", update_help, causal_update},
        {"status", "causal status", status_help, causal_status},
        {NULL, NULL, NULL, NULL}};
    return cli_subcommand(ctx, cmd_causal_help, subs, argc, argv);
}

/* ---- import --from causal-graph FILE ------------------------------------------------- */

int cli_import_causal_graph(cli_ctx *ctx, const char *file, int json)
{
    cairn_causal_import_stats st;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    char *data = NULL;
    size_t len = 0;
    int rc, x;

    if (cli_read_file(file, &data, &len) != 0)
        return cli_fail(ctx->cmd, CAIRN_EIO, "cannot read %s: %s",
                        strcmp(file, "-") ? file : "stdin", strerror(errno));
    if ((rc = cli_reflex_open(ctx, 1, &db, &r)) != CLI_EXIT_OK) {
        free(data);
        return rc;
    }
    memset(&st, 0, sizeof st);
    x = cairn_causal_import(r, data, len, &st);
    free(data);
    if (x != CAIRN_OK) {
        rc = cli_reflex_fail(ctx, r, x, strcmp(file, "-") ? file : "stdin");
    } else if (json) {
        printf("{\"nodes\":%llu,\"merged\":%llu,\"edges\":%llu,\"patterns\":%llu,"
               "\"skipped\":%llu}\n",
               (unsigned long long)st.nodes, (unsigned long long)st.merged,
               (unsigned long long)st.edges, (unsigned long long)st.patterns,
               (unsigned long long)st.skipped);
    } else {
        printf("nodes: %llu\n", (unsigned long long)st.nodes);
        if (st.merged > 0) /* never in silence: the graph gained fewer */
            printf("merged: %llu (same label as another node; the graph gained %llu)\n",
                   (unsigned long long)st.merged, (unsigned long long)(st.nodes - st.merged));
        printf("edges: %llu\npatterns: %llu\nskipped: %llu\n", (unsigned long long)st.edges,
               (unsigned long long)st.patterns, (unsigned long long)st.skipped);
    }
    return cli_reflex_close(ctx, db, r, rc);
}
