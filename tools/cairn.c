/*
 * cairn.c - the dispatcher of the `cairn` command-line tool.
 *
 *   cairn [--store DIR] COMMAND [ARGS...]
 *
 * Parses the global options, finds COMMAND in the table below and runs it
 * with the remaining arguments. Commands live one group per file
 * (cmd_*.c) and use only the public cairn.h; see commands.h to add one.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_asof.h"
#include "commands.h"

typedef struct command {
    const char *name;
    const char *summary; /* one line for `cairn --help` */
    const char *help;    /* the full help text */
    cli_cmd_fn run;
    int group;           /* 1: argv[0] names a subcommand (`cairn episode new`) */
} command;

static const char help_help[] =
    "usage: cairn help [COMMAND [SUBCOMMAND]]\n"
    "\n"
    "Print the help text of COMMAND (the same as `cairn COMMAND --help`), of a\n"
    "subcommand of episode, causal or pattern (`cairn help causal path` is\n"
    "`cairn causal path --help`), or without COMMAND the overview of every\n"
    "command.\n"
    "\n"
    "Exit status: 0 success, 64 unknown command or subcommand.\n";

static int cmd_help(cli_ctx *ctx, int argc, char **argv);

static const command commands[] = {
    {"init", "create a store", cmd_init_help, cmd_init, 0},
    {"log", "append JSON records (arguments, or lines of stdin)", cmd_log_help, cmd_log, 0},
    {"dump", "print records as JSON lines", cmd_dump_help, cmd_dump, 0},
    {"verify", "check every checksum and structure of the store", cmd_verify_help, cmd_verify,
     0},
    {"head", "the head of the log's hash chain, to keep elsewhere (optionally signed)",
     cmd_head_help, cmd_head, 0},
    {"replay", "a new store holding the log up to a seq, for offline analysis, verified",
     cmd_replay_help, cmd_replay, 0},
    {"stats", "print the store's statistics", cmd_stats_help, cmd_stats, 0},
    {"config", "list the store's settings, or change max-memories or retain", cmd_config_help,
     cmd_config, 0},
    {"add", "store a memory", cmd_add_help, cmd_add, 0},
    {"get", "print a memory", cmd_get_help, cmd_get, 0},
    {"update", "change a memory's category, importance, metadata or expiry", cmd_update_help,
     cmd_update, 0},
    {"list", "list memories without a query, by namespace, category and time", cmd_list_help,
     cmd_list, 0},
    {"history", "every record of the log that made or changed a memory", cmd_history_help,
     cmd_history, 0},
    {"remove", "delete a memory (a tombstone)", cmd_remove_help, cmd_remove, 0},
    {"restore", "bring back a removed, pruned or forgotten memory", cmd_restore_help,
     cmd_restore, 0},
    {"recall", "the memories that best match a query", cmd_recall_help, cmd_recall, 0},
    {"context", "recalled memories as a block for a prompt", cmd_context_help, cmd_context, 0},
    {"forget", "prune expired, old or faded memories", cmd_forget_help, cmd_forget, 0},
    {"remember", "store what an LLM finds worth remembering in a conversation",
     cmd_remember_help, cmd_remember, 0},
    {"merge", "merge near-duplicate memories (by their vectors)", cmd_merge_help, cmd_merge, 0},
    {"clear", "delete every memory of a namespace, or all", cmd_clear_help, cmd_clear, 0},
    {"export", "print every memory as json, md or csv", cmd_export_help, cmd_export, 0},
    {"import", "import memories (exports, markdown), episodes or a causal graph",
     cmd_import_help, cmd_import, 0},
    {"search", "search memories by relevance (the Search-Memory skill)", cmd_search_help,
     cmd_search, 0},
    {"status", "the search router's status", cmd_status_help, cmd_status, 0},
    {"checkpoint", "write the memory index and graph files now", cmd_checkpoint_help, cmd_checkpoint, 0},
    {"compact", "drop the records the retention policy no longer keeps", cmd_compact_help,
     cmd_compact, 0},
    {"purge", "remove every record of one memory now", cmd_purge_help, cmd_purge, 0},
    {"episode", "episodes of agent sessions: new, get, list, decisions, extract",
     cmd_episode_help, cmd_episode, 1},
    {"causal", "the causal graph: node, edge, path, update, status", cmd_causal_help,
     cmd_causal, 1},
    {"pattern", "patterns and anti-patterns: add, list, anti", cmd_pattern_help, cmd_pattern, 1},
    {"stream", "the memory stream of cycles and roles: add, list, search", cmd_stream_help,
     cmd_stream, 1},
    {"core", "core memory sections: show, set, append, remove", cmd_core_help, cmd_core, 1},
    {"tiers", "the cognitive tiers: stats, reflect", cmd_tiers_help, cmd_tiers, 1},
    {"archival", "archival memory: insert, search, index", cmd_archival_help, cmd_archival, 1},
    {"tokens", "the token estimate of a text", cmd_tokens_help, cmd_tokens, 0},
    {"mcp", "serve the store to MCP clients over stdio", cmd_mcp_help, cmd_mcp, 0},
    {"help", "print the help of a command", help_help, cmd_help, 0},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void print_overview(FILE *f)
{
    fprintf(f,
            "usage: cairn [--store DIR] COMMAND [ARGS...]\n"
            "\n"
            "The command-line tool of libcairn %s, an append-only, log-structured\n"
            "memory store for AI agents. A store is a directory.\n"
            "\n"
            "Commands:\n",
            CAIRN_VERSION_STRING);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "Global options:\n"
          "  --store DIR   the store directory (default: $CAIRN_STORE if set and not\n"
          "                empty, else ./.cairn); also accepted after COMMAND\n"
          "  --embed-cmd CMD  embed memories and queries with an external program\n"
          "                (default: $CAIRN_EMBED_CMD): `sh -c CMD` reads JSON\n"
          "                strings, one per line, on stdin and writes one JSON array\n"
          "                of floats per line (nothing after it) on stdout\n"
          "  --embed-builtin  embed with the built-in embedder (cairn-hash-v1: word\n"
          "                forms and misspellings, no synonyms). Without an embedder\n"
          "                option a store that holds vectors uses their embedder (the\n"
          "                built-in one; another must be named with --embed-cmd), and\n"
          "                a store that holds none stays lexical: vectors cost about\n"
          "                3 KiB a memory\n"
          "  --embed-name NAME  the identity its vectors are stored under (default:\n"
          "                CMD itself; at most 63 bytes)\n"
          "  --embed-timeout S  seconds the program may take per call (default 30);\n"
          "                then it is killed with its process group\n"
          "  --no-embed    no embedder: lexical only, new memories carry no vector\n"
          "  --busy-timeout MS  how long a write waits while another process holds\n"
          "                the store's writer lock (default 5000; 0: not at all);\n"
          "                then it fails with CAIRN_ELOCKED naming that process.\n"
          "                Reads never wait. Also accepted after COMMAND\n"
          "  -h, --help    print this help and exit\n"
          "  --version     print the version and exit\n"
          "\n"
          "Exit status:\n"
          "  0   success\n"
          "  1   error: the operation failed (bad input, I/O error, store locked by\n"
          "      another writer, no store, ...)\n"
          "  2   `cairn verify` found problems\n"
          "  64  usage error: unknown command or option, missing or bad argument\n"
          "\n"
          "Errors are one line on stderr: \"cairn: COMMAND: detail (CAIRN_EXXX)\";\n"
          "with --format json (or --json) one JSON object on stderr instead:\n"
          "{\"error\":{\"command\",\"code\",\"message\",\"exit\"}} (code \"usage\" for 64).\n"
          "Run `cairn help COMMAND` or `cairn COMMAND --help` for a command's options.\n",
          f);
}

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static int cmd_help(cli_ctx *ctx, int argc, char **argv)
{
    const command *c;
    cli_args a;
    const char *name, *val, *topic = NULL;
    char *sub = NULL;
    int r;

    cli_args_init(&a, ctx, NULL, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(help_help);
        if (sub != NULL || (topic != NULL && (c = find_command(topic)) != NULL && !c->group))
            return cli_usage_error(ctx->cmd, "too many arguments");
        if (topic != NULL)
            sub = a.argv[a.i - 1]; /* val, not const */
        else
            topic = val;
    }
    if (topic == NULL) {
        print_overview(stdout);
        return CLI_EXIT_OK;
    }
    c = find_command(topic);
    if (c == NULL)
        return cli_usage_error(ctx->cmd, "unknown command '%s' (see 'cairn --help')", topic);
    if (sub != NULL) {
        /* The group prints its subcommand's help, or rejects the name. */
        static char help_opt[] = "--help";
        char *args[2];
        args[0] = sub;
        args[1] = help_opt;
        ctx->cmd = c->name;
        return c->run(ctx, 2, args);
    }
    return cli_help(c->help);
}

/* Output that could not be written is a failure, not a success (a reader
 * that went away, EPIPE, is its own business). */
static int finish(const char *name, int rc)
{
    int bad, err;

    errno = 0;
    bad = fflush(stdout) != 0;
    err = errno;
    if (!bad && ferror(stdout)) {
        bad = 1;
        err = 0;
    }
    if (bad && rc == CLI_EXIT_OK && err != EPIPE) {
        fprintf(stderr, "cairn: %s: writing the output: %s\n", name,
                err ? strerror(err) : "write error");
        rc = CLI_EXIT_FAIL;
    }
    return rc;
}

int main(int argc, char **argv)
{
    cli_ctx ctx;
    const command *c;
    const char *env = getenv("CAIRN_STORE");
    int i, rc, cmd_flag = 0;

#ifdef M_ARENA_MAX
    /* One malloc arena for all the tool's threads (indexer, flusher,
     * sealer, merger), not one each: an import of 100,000 memories peaks
     * at ~135 MiB instead of ~150 (bench_import), in the same time. */
    (void)mallopt(M_ARENA_MAX, 1);
#endif
    memset(&ctx, 0, sizeof ctx);
    ctx.cmd = "cairn";
    ctx.store = env && env[0] ? env : "./.cairn";
    env = getenv("CAIRN_EMBED_CMD");
    ctx.embed_cmd = env && env[0] ? env : NULL;
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_overview(stdout);
            return finish("help", CLI_EXIT_OK);
        }
        if (strcmp(arg, "--version") == 0) {
            printf("cairn %s\n", cairn_version()); /* the library it runs with */
            return finish("version", CLI_EXIT_OK);
        }
        if (strcmp(arg, "--store") == 0 || strncmp(arg, "--store=", 8) == 0) {
            const char *v = arg[7] == '=' ? arg + 8 : (i + 1 < argc ? argv[++i] : NULL);
            if (v == NULL || v[0] == '\0') {
                fputs("cairn: option '--store' needs a directory\n", stderr);
                return CLI_EXIT_USAGE;
            }
            ctx.store = v;
            continue;
        }
        if (strcmp(arg, "--no-embed") == 0) {
            ctx.no_embed = 1;
            continue;
        }
        if (strcmp(arg, "--embed-builtin") == 0) {
            ctx.embed_builtin = 1;
            continue;
        }
        if (strcmp(arg, "--busy-timeout") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            uint64_t ms = 0;
            if (v == NULL || cli_parse_u64(v, 86400000, &ms) != 0) {
                fputs("cairn: --busy-timeout needs milliseconds, 0..86400000\n", stderr);
                return CLI_EXIT_USAGE;
            }
            ctx.busy_timeout_ms = ms == 0 ? 1u : (unsigned)ms; /* 0: do not wait */
            continue;
        }
        if (strcmp(arg, "--embed-cmd") == 0 || strcmp(arg, "--embed-name") == 0 ||
            strcmp(arg, "--embed-timeout") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            uint64_t secs = 0;
            if (v == NULL || v[0] == '\0') {
                fprintf(stderr, "cairn: option '%s' needs a value\n", arg);
                return CLI_EXIT_USAGE;
            }
            if (arg[8] == 'c') {
                ctx.embed_cmd = v;
                cmd_flag = 1;
            } else if (arg[8] == 'n') {
                if (strlen(v) > CAIRN_EMBEDDER_NAME_MAX) {
                    fprintf(stderr, "cairn: --embed-name: at most %d bytes\n",
                            CAIRN_EMBEDDER_NAME_MAX);
                    return CLI_EXIT_USAGE;
                }
                ctx.embed_name = v;
            } else {
                if (cli_parse_u64(v, 3600, &secs) != 0 || secs == 0) {
                    fputs("cairn: --embed-timeout: 1..3600 seconds\n", stderr);
                    return CLI_EXIT_USAGE;
                }
                ctx.embed_timeout_ms = (int)secs * 1000;
            }
            continue;
        }
        if (arg[0] == '-') {
            fprintf(stderr, "cairn: unknown option '%s' (see 'cairn --help')\n", arg);
            return CLI_EXIT_USAGE;
        }
        break;
    }
    if (ctx.embed_builtin && (ctx.no_embed || cmd_flag)) {
        fprintf(stderr, "cairn: --embed-builtin and %s: one embedder at most\n",
                ctx.no_embed ? "--no-embed" : "--embed-cmd");
        return CLI_EXIT_USAGE;
    }
    if (ctx.embed_builtin)
        ctx.embed_cmd = NULL; /* named on the command line: before $CAIRN_EMBED_CMD */
    if (i == argc) {
        fputs("cairn: no command given (see 'cairn --help')\n", stderr);
        return CLI_EXIT_USAGE;
    }
    c = find_command(argv[i]);
    if (c == NULL) {
        fprintf(stderr, "cairn: unknown command '%s' (see 'cairn --help')\n", argv[i]);
        return CLI_EXIT_USAGE;
    }
    ctx.cmd = c->name;
    /* --format json (or --json) anywhere after the command: its errors
     * are JSON too, also those met before the option is read. (import's
     * --format names its input; its --json asks for JSON output.) */
    for (int k = i + 1; k < argc; k++)
        if (strcmp(argv[k], "--json") == 0 ||
            (strcmp(c->name, "import") != 0 &&
             (strcmp(argv[k], "--format=json") == 0 ||
              (strcmp(argv[k], "--format") == 0 && k + 1 < argc && strcmp(argv[k + 1], "json") == 0))))
            cli_set_json_errors(1);
    {
        /* --as-of TIME|SEQ: the command runs on a view of the log up to then */
        static char view[4096];
        int n = argc - i - 1;
        rc = cli_as_of_setup(&ctx, &n, argv + i + 1, view, sizeof view);
        if (rc >= 0 && rc != CLI_EXIT_OK)
            return finish(c->name, rc);
        rc = c->run(&ctx, n, argv + i + 1);
        cli_as_of_cleanup(view);
    }
    return finish(c->name, rc);
}
