/*
 * cli_asof.h - `--as-of TIME|SEQ` on the commands that read (cli_asof.c).
 */
#ifndef CAIRN_CLI_ASOF_H
#define CAIRN_CLI_ASOF_H

#include <stddef.h>

#include "cli_util.h"

/* The line every help text that takes --as-of shows. */
#define AS_OF_HELP                                                                  \
    "  --as-of T|SEQ    answer as the store would have at seq SEQ, or at time T\n"   \
    "                   (as dump's --until takes it: the newest seq at or before\n" \
    "                   it); a view of the log up to there (README \"Replay\")\n"

/* Take --as-of out of argv (*argc shrinks). Not there: -1. There, on a
 * command that takes it: the view made in view (cap bytes), ctx->store set
 * to it, CLI_EXIT_OK. Else an exit status, reported. */
int cli_as_of_setup(cli_ctx *ctx, int *argc, char **argv, char *view, size_t cap);
/* Remove the view (a directory of plain files); "" does nothing. */
void cli_as_of_cleanup(const char *view);

#endif /* CAIRN_CLI_ASOF_H */
