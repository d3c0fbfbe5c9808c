/*
 * cli_util.h - helpers shared by the subcommands of the `cairn` tool:
 * exit codes, the one-line error reporters, option parsing, opening a store,
 * and parsing times, sizes and numbers. Uses only the public cairn.h.
 */
#ifndef CAIRN_CLI_UTIL_H
#define CAIRN_CLI_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>

#include "cairn.h"

/* Exit codes (documented in `cairn --help`). */
#define CLI_EXIT_OK 0       /* success */
#define CLI_EXIT_FAIL 1     /* the operation failed: bad input, I/O, locked, not found... */
#define CLI_EXIT_PROBLEMS 2 /* verify found problems */
#define CLI_EXIT_USAGE 64   /* unknown command/option, missing or bad argument (EX_USAGE) */

/* What every command receives from the dispatcher. */
typedef struct cli_ctx {
    const char *cmd;   /* the command's name, for messages */
    const char *store; /* --store, else $CAIRN_STORE, else "./.cairn"; a command's
                          own --store replaces it */
    /* The embedder (cli_embed.h): --embed-cmd (else $CAIRN_EMBED_CMD), or
     * the built-in one with --embed-builtin; without either, the store's
     * (the built-in one when it holds vectors, none when it holds none);
     * none with --no-embed. */
    const char *embed_cmd;
    int embed_builtin;
    const char *embed_name;  /* --embed-name: its identity; default the command */
    int embed_timeout_ms;    /* --embed-timeout SECONDS; 0 = 30 s */
    int no_embed;
    unsigned busy_timeout_ms; /* --busy-timeout MS: how long a write waits for
                                 another process's turn; 0 = 5000 */
    int64_t as_of_ms;         /* --as-of: the moment's time (the TIME given, or the
                                 seq's record's), now for the memory engine; 0: none */
} cli_ctx;

/* ---- errors: exactly one line on stderr, "cairn: <cmd>: <detail>" ---- */

/* The status name of a code ("CAIRN_ELOCKED"): cairn_strerror() up to the
 * colon, copied into buf. Returns buf. */
const char *cli_code_name(int code, char *buf, size_t len);

/* "cairn: <cmd>: <detail>"; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "cairn: <cmd>: <detail> (CAIRN_EXXX)"; returns CLI_EXIT_FAIL. */
/* Errors as a JSON object on stderr from now on (main sets it when the
 * command line asks for --format json or --json). */
void cli_set_json_errors(int on);
int cli_json_errors(void);

int cli_fail(const char *cmd, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* As cli_fail, with the JSON error's "kind" given (CYCLE_NOT_FOUND) instead
 * of the one the code implies. */
int cli_fail_kind(const char *cmd, int code, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "cairn: <cmd>: [<prefix>: ]<cairn_errmsg(db)> (CAIRN_EXXX)"; prefix may be
 * NULL. Falls back to cairn_strerror's sentence when the handle has no
 * message. Returns CLI_EXIT_FAIL. */
int cli_fail_db(const char *cmd, cairn_db *db, int code, const char *prefix);

/* ---- option parsing -------------------------------------------------- */

/* One option a command accepts, spelled "--name" (or "--name=value"). */
typedef struct cli_optspec {
    const char *name; /* without the dashes; NULL ends a table */
    int has_arg;      /* 1: takes a value ("--name V" or "--name=V") */
} cli_optspec;

enum {
    CLI_ARG_END = 0,  /* no more arguments */
    CLI_ARG_OPT = 1,  /* an option: *name, and *value when it takes one */
    CLI_ARG_POS = 2,  /* a positional argument in *value */
    CLI_ARG_HELP = 3, /* --help or -h */
    CLI_ARG_ERR = 4   /* unknown option or missing value; reported already */
};

/* Iterates over a command's arguments. Only words starting with "--" are
 * options (so a JSON argument such as -5 is positional); "--" ends options.
 * Every command also accepts --store DIR, which updates ctx->store. */
typedef struct cli_args {
    cli_ctx *ctx;
    const cli_optspec *spec;
    int argc;
    char **argv;
    int i;        /* next index into argv */
    int opts_end; /* "--" seen */
} cli_args;

void cli_args_init(cli_args *a, cli_ctx *ctx, const cli_optspec *spec, int argc, char **argv);
/* Next argument; see the CLI_ARG_* values. For CLI_ARG_OPT *name is the
 * option's name from the spec table (compare with strcmp). */
int cli_args_next(cli_args *a, const char **name, const char **value);

/* Print a command's help text to stdout; returns CLI_EXIT_OK. */
int cli_help(const char *text);

/* --where ARG of recall-like commands: PATH=VALUE, PATH>=NUMBER or
 * PATH<=NUMBER into *w (pointing into arg, which must outlive it).
 * Returns -1 when parsed, else a usage error's exit code. */
int cli_parse_where(const char *cmd, const char *arg, char *buf, size_t cap, cairn_where *w);

/* ---- opening a store --------------------------------------------------- */

/* Open ctx->store read-only (no lock, no background thread). A missing
 * store is reported as "no store at DIR (run 'cairn init')". On failure
 * prints the error and returns its status code, *out NULL. */
int cli_open_read(const cli_ctx *ctx, cairn_db **out);
/* Options for cairn_open with what the command line says (--busy-timeout). */
void cli_options(const cli_ctx *ctx, cairn_options *o);
/* After a writer's open: say on stderr what its recovery found (bytes set
 * aside, records lost at the log's tail). */
void cli_warn_recovery(const cli_ctx *ctx, cairn_db *db);

/* All of the regular file at path (symbolic links followed) into *out
 * (NUL-terminated, malloc'd, *len bytes), for the walks over a directory:
 * what is not a regular file is never opened for reading, and nothing here
 * blocks (a FIFO named like a note cannot hang an import). Returns 0; 1
 * when it is not a regular file (*kind says what it is, for the report);
 * -1 with errno when it cannot be read. */
int cli_read_regular(const char *path, char **out, size_t *len, const char **kind);

/* ---- signals ------------------------------------------------------------ */

/* For a command that waits (mcp, dump --follow): block SIGINT, SIGTERM and
 * SIGHUP in this thread and every thread started after it (call before
 * opening the store), with handler (no SA_RESTART) for when the wait lets
 * them through; SIGPIPE ignored (a closed pipe is a failed write).
 * *wait_mask gets the mask to wait with (pselect, ppoll): the stop signals
 * let through. A signal that comes outside the wait stays pending until
 * it, so none is lost. */
void cli_stop_signals(void (*handler)(int), sigset_t *wait_mask);

/* ---- values ------------------------------------------------------------ */

/* Current time in ms since the Unix epoch. */
int64_t cli_now_ms(void);

/* Parse a time: ISO 8601 UTC ("2026-11-22", "2026-11-22T05:04",
 * "2026-11-22T05:04:45.123Z", "...+02:00"), "@<epoch ms>", "now", or a
 * duration meaning that long before `now_ms` ("30s", "15m", "2h", "7d",
 * "2w", "500ms"). Returns 0 and *out_ms, or -1. */
int cli_parse_time(const char *s, int64_t now_ms, int64_t *out_ms);

/* Format ms since the epoch as "2026-11-22T05:04:45.123Z" (buf >= 40 bytes). */
void cli_format_time(int64_t ms, char *buf, size_t len);

/* Parse a decimal unsigned integer (digits only) <= max. Returns 0 or -1. */
int cli_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* Parse a size: BYTES, or NK / NM / NG (binary units, case-insensitive,
 * optional trailing "B" or "iB"). Returns 0 or -1. */
int cli_parse_size(const char *s, uint64_t *out);

/* Name of a durability mode ("none", "batch", "full"). */
const char *cli_durability_name(cairn_durability d);

/* --format VALUE: text (0) or json (1) into *json. Returns -1 when valid,
 * else the usage exit code (the message printed). */
int cli_parse_format(const char *cmd, const char *v, int *json);

/* The arguments of a command whose only options say how to print (spec:
 * "format" and/or "json", or NULL for none; --store and --help as always):
 * *json set by --json or --format json. Returns -1 to go on, else the exit
 * code (help printed, or a usage error). */
int cli_output_args(cli_ctx *ctx, const cli_optspec *spec, int argc, char **argv,
                    const char *help, int *json);

#endif /* CAIRN_CLI_UTIL_H */
