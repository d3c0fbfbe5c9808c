/*
 * commands.h - the subcommands of the `cairn` tool. Each takes the
 * arguments after its name (argv[0] is the first of them, not the name)
 * and returns the process exit code (CLI_EXIT_*). Each has a help text,
 * printed by `cairn help NAME` and `cairn NAME --help`.
 *
 * To add a command: write `int cmd_x(cli_ctx *, int, char **)` and its
 * help text in the file of its group, declare both here, and add a row to
 * the table in cairn.c.
 */
#ifndef CAIRN_CLI_COMMANDS_H
#define CAIRN_CLI_COMMANDS_H

#include "cli_util.h"

typedef int (*cli_cmd_fn)(cli_ctx *ctx, int argc, char **argv);

/* cmd_store.c: creating and inspecting a store. */
extern const char cmd_init_help[];
int cmd_init(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_verify_help[];
int cmd_verify(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_head_help[];
int cmd_head(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_replay_help[];
int cmd_replay(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_checkpoint_help[];
int cmd_checkpoint(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_stats_help[];
int cmd_stats(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_config_help[];
int cmd_config(cli_ctx *ctx, int argc, char **argv);

/* cmd_log.c: writing and reading records. */
extern const char cmd_log_help[];
int cmd_log(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_dump_help[];
int cmd_dump(cli_ctx *ctx, int argc, char **argv);

/* cmd_mem.c: memories. */
extern const char cmd_add_help[];
int cmd_add(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_get_help[];
int cmd_get(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_update_help[];
int cmd_update(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_list_help[];
int cmd_list(cli_ctx *ctx, int argc, char **argv);

/* cmd_history.c: one memory's records in the log. */
extern const char cmd_history_help[];
int cmd_history(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_remove_help[];
int cmd_remove(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_restore_help[];
int cmd_restore(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_recall_help[];
int cmd_recall(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_context_help[];
int cmd_context(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_forget_help[];
int cmd_forget(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_remember_help[];
int cmd_remember(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_merge_help[];
int cmd_merge(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_clear_help[];
int cmd_clear(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_export_help[];
int cmd_export(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_import_help[];
int cmd_import(cli_ctx *ctx, int argc, char **argv);

/* cmd_compact.c: dropping what the retention policy no longer keeps, and
 * purging one memory. */
extern const char cmd_compact_help[];
int cmd_compact(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_purge_help[];
int cmd_purge(cli_ctx *ctx, int argc, char **argv);

/* cmd_mcp.c: the MCP server. */
extern const char cmd_mcp_help[];
int cmd_mcp(cli_ctx *ctx, int argc, char **argv);

/* cmd_search.c: the Search-Memory skill and the router status. */
extern const char cmd_search_help[];
int cmd_search(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_status_help[];
int cmd_status(cli_ctx *ctx, int argc, char **argv);

/* cmd_episode.c and cmd_causal.c: reflexion (episodes, the causal graph,
 * patterns). Each is a group: argv[0] names the subcommand. */
extern const char cmd_episode_help[];
int cmd_episode(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_causal_help[];
int cmd_causal(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_pattern_help[];
int cmd_pattern(cli_ctx *ctx, int argc, char **argv);

/* cmd_tiers.c: the cognitive tiers (stream, core, tiers are groups). */
extern const char cmd_stream_help[];
int cmd_stream(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_core_help[];
int cmd_core(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_tiers_help[];
int cmd_tiers(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_archival_help[];
int cmd_archival(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_tokens_help[];
int cmd_tokens(cli_ctx *ctx, int argc, char **argv);
/* `cairn import --from ada DIR`: bank.md, stream.jsonl and rotation.json of
 * DIR into the tiers of scope (NULL: global). json: print the report. */
int cli_import_ada(cli_ctx *ctx, const char *dir, const char *scope, int json);

/* `cairn import --from episodes DIR`: every *.json file of DIR (in name
 * order) through cairn_episode_put(); sessions that have an episode are
 * skipped unless force; files that are not valid episodes are counted and
 * named (exit 1 after the others are imported). json: print JSON. */
int cli_import_episodes(cli_ctx *ctx, const char *dir, int force, int json);
/* `cairn import --from causal-graph FILE` (FILE may be "-"): the seed's
 * causal-graph.json through cairn_causal_import(). */
int cli_import_causal_graph(cli_ctx *ctx, const char *file, int json);

#endif /* CAIRN_CLI_COMMANDS_H */
