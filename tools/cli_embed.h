/*
 * cli_embed.h - the embedder of the tool: the built-in one by default,
 * `--embed-cmd CMD` (an external program), or none (`--no-embed`).
 *
 * The external program is run as `/bin/sh -c CMD` once per batch of texts:
 * it reads one JSON string per line on stdin (the texts, in order) until
 * end of input, and writes one JSON array of floats per line on stdout, in
 * the same order. Its stderr passes through. It must exit 0 within the
 * timeout (--embed-timeout, default 30 s) and answer every text with the
 * same number of values, nothing but white space after an array on its
 * line; anything else is an error and nothing is stored. On a timeout it
 * is killed with its process group (cli_proc.h).
 */
#ifndef CAIRN_CLI_EMBED_H
#define CAIRN_CLI_EMBED_H

#include "cairn.h"
#include "cli_util.h"

typedef struct cli_embedder {
    cairn_embedder e;     /* what the engine gets (e.dim 0: none) */
    char name[CAIRN_EMBEDDER_NAME_MAX + 1];
    const char *cmd;      /* NULL: the built-in one */
    int timeout_ms;
} cli_embedder;

/* Give mem the embedder the options ask for. Prints an error and returns
 * CLI_EXIT_FAIL when it cannot (the store's vectors come from another
 * embedder, the program fails); `quiet_mismatch`: a store of another
 * embedder just gets none (for read-only commands that can still search
 * lexically). */
int cli_embedder_attach(const cli_ctx *ctx, cairn_mem *mem, cli_embedder *ce, int quiet_mismatch);

/* Free what attach made; accepts a zeroed one. */
void cli_embedder_done(cli_embedder *ce);

/* Run the external program on n texts: the engine's embed_batch callback
 * (user is the cli_embedder). Exposed for tests of the protocol. */
int cli_embed_cmd_batch(void *user, const char *const *texts, const size_t *lens, size_t n,
                        float *out, char *err);

#endif /* CAIRN_CLI_EMBED_H */
