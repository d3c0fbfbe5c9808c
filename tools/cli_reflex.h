/*
 * cli_reflex.h - what the reflexion commands of the `cairn` tool share
 * (cmd_episode.c: `cairn episode`; cmd_causal.c: `cairn causal`;
 * `cairn pattern`): dispatch to a subcommand, opening the store with its
 * reflexion state, reporting the handle's errors, the option value checks
 * with ReflexionMemory's messages, reading a file, and printing JSON or "key:
 * value" lines. Uses only the public cairn.h.
 */
#ifndef CAIRN_CLI_REFLEX_H
#define CAIRN_CLI_REFLEX_H

#include <stddef.h>
#include <stdint.h>

#include "commands.h"

struct cJSON;

/* One subcommand of a group ("episode new"). A table ends with name NULL. */
typedef struct cli_subcmd {
    const char *name; /* "new" */
    const char *full; /* "episode new": ctx->cmd while it runs (error lines, hints) */
    const char *help; /* its --help text */
    cli_cmd_fn run;   /* gets the arguments after the subcommand's name */
} cli_subcmd;

/* Run the subcommand named by argv[0] (options before it: --store DIR only;
 * --help or -h instead of a name prints group_help). Returns the exit code:
 * the subcommand's, or CLI_EXIT_USAGE for a missing or unknown name. */
int cli_subcommand(cli_ctx *ctx, const char *group_help, const cli_subcmd *subs, int argc,
                   char **argv);

/* Open the store and its reflexion state. write = 1: the writer (the store
 * is created with default settings if missing); write = 0: read-only (no
 * lock; a missing store is "no store at DIR (run 'cairn init')"). Warns on
 * stderr when records could not be applied. On failure the error is
 * printed, *db and *r are NULL, and the exit code is returned. */
int cli_reflex_open(cli_ctx *ctx, int write, cairn_db **db, cairn_reflex **r);

/* Close both (NULL accepted); a failure to close the store turns a success
 * into CLI_EXIT_FAIL. Returns the exit code. */
int cli_reflex_close(cli_ctx *ctx, cairn_db *db, cairn_reflex *r, int exit_code);

/* "cairn: CMD: [prefix: ]<cairn_reflex_errmsg(r) or the code's sentence>
 * (CAIRN_EXXX)"; returns CLI_EXIT_FAIL. prefix may be NULL. */
int cli_reflex_fail(cli_ctx *ctx, cairn_reflex *r, int code, const char *prefix);

/* The cases every subcommand's option loop shares (x from cli_args_next):
 * an error (exit 64), --help (prints help, exit 0), a positional argument
 * (unexpected: exit 64), --format (sets *json). Returns 1 when it took x,
 * with *rc set to -1 to go on or to the exit code; 0 for the command's own
 * options. */
int cli_reflex_arg(cli_ctx *ctx, int x, const char *name, const char *val, const char *help,
                   int *json, int *rc);

/* ---- option values: each returns -1 when valid, else CLI_EXIT_USAGE with
 * the one-line message printed. `opt` is the option's name without dashes;
 * the message names it and ReflexionMemory's parameter (its PascalCase). ---- */

/* A number lo..hi ("0..1" ranges): --weight, --success-rate, ... */
int cli_opt_double(const char *cmd, const char *opt, const char *v, double lo, double hi,
                   double *out);
/* An integer lo..hi: --max-results, --max-depth, --min-occurrences. */
int cli_opt_uint(const char *cmd, const char *opt, const char *v, uint64_t lo, uint64_t hi,
                 uint64_t *out);
/* A time as everywhere in the tool (cli_parse_time): --since. */
int cli_opt_time(const char *cmd, const char *opt, const char *v, int64_t *out_ms);
/* A string ReflexionMemory requires to be non-empty. */
int cli_opt_nonempty(const char *cmd, const char *opt, const char *v);
/* "missing --opt" for a required option that was not given. */
int cli_opt_missing(const char *cmd, const char *opt);

/* All of a file, or stdin for "-", NUL-terminated, into *out (free()).
 * Returns 0, or -1 with errno set. */
int cli_read_file(const char *path, char **out, size_t *len);

/* Print JSON text (valid JSON, e.g. from the engine) on one line. */
void cli_print_json_text(const char *s);
/* Print a cJSON value on one line, then delete it (NULL: nothing printed). */
void cli_print_cjson(struct cJSON *o);

/* The string member `name` of a cJSON object, or "" when absent / not a
 * string. */
const char *cli_jstr(const struct cJSON *o, const char *name);

/* A JSON array of the n strings s[] (copies). */
struct cJSON *cli_json_str_array(char **s, size_t n);
/* Add `name`: ms as ISO 8601 ("2026-01-01T17:05:00.000Z"), or null for 0. */
void cli_json_add_time(struct cJSON *o, const char *name, int64_t ms);
/* A flat object as "key: value" lines, values aligned: strings as they are,
 * null as "-", numbers %.6g (exact integers as digits), arrays of strings
 * joined by ", " ("-" when empty). */
void cli_print_kv(const struct cJSON *o);
/* Print o as one JSON line (json) or as cli_print_kv (text); deletes o. */
void cli_emit(struct cJSON *o, int json);

#endif /* CAIRN_CLI_REFLEX_H */
