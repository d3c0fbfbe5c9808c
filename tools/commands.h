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
extern const char cmd_checkpoint_help[];
int cmd_checkpoint(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_stats_help[];
int cmd_stats(cli_ctx *ctx, int argc, char **argv);

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
extern const char cmd_remove_help[];
int cmd_remove(cli_ctx *ctx, int argc, char **argv);
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

/* cmd_search.c: the Search-Memory skill and the router status. */
extern const char cmd_search_help[];
int cmd_search(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_status_help[];
int cmd_status(cli_ctx *ctx, int argc, char **argv);

#endif /* CAIRN_CLI_COMMANDS_H */
