/*
 * cli_mem.h - opening the memory engine for a command of the `cairn` tool
 * (cmd_mem.c defines these; cmd_tiers.c uses them too). Uses only the
 * public cairn.h.
 */
#ifndef CAIRN_CLI_MEM_H
#define CAIRN_CLI_MEM_H

#include "cli_util.h"

/* Open the store and the memory engine with the tool's embedder: to write
 * (the store created if missing) or to read (read-only: no lock, never
 * waits for a writer). On failure the error is printed, *db and *mem are
 * NULL, and the exit code is returned. */
int cli_mem_open(cli_ctx *ctx, int write, cairn_db **db, cairn_mem **mem);

/* Close both (NULL accepted); a failure to close the store turns a success
 * into CLI_EXIT_FAIL. Returns the exit code. */
int cli_mem_close(cli_ctx *ctx, cairn_db *db, cairn_mem *mem, int exit_code);

/* "cairn: CMD: <cairn_mem_errmsg(mem) or the code's sentence> (CODE)";
 * returns CLI_EXIT_FAIL. */
int cli_mem_fail(cli_ctx *ctx, cairn_mem *mem, int rc);

#endif /* CAIRN_CLI_MEM_H */
