/*
 * cli_util.c - helpers shared by the `cairn` subcommands.
 *
 * Error output contract (every command): exactly one line on stderr,
 * "cairn: <command>: <detail>", where an engine failure's detail is the
 * handle's (or cairn_open's) message followed by " (CAIRN_EXXX)". Usage
 * errors carry no status name and lead to exit 64.
 *
 * Times are civil UTC computed with Howard Hinnant's days-from-civil
 * algorithm (engine/common/civil.h, the engine's own), so nothing depends
 * on the TZ environment or on timegm().
 */
#include <cjson/cJSON.h>

#include "cli_util.h"
#include "civil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- errors ------------------------------------------------------------- */

const char *cli_code_name(int code, char *buf, size_t len)
{
    const char *s = cairn_strerror(code);
    const char *colon = strchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : strlen(s);

    if (len == 0)
        return buf;
    if (n >= len)
        n = len - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return buf;
}

/* 1 when the command line asks for JSON (--format json, --json): errors
 * are then a JSON object too. */
static int json_errors;

void cli_set_json_errors(int on)
{
    json_errors = on;
}

int cli_json_errors(void)
{
    return json_errors;
}

/* The kind of an error as the cognitive memory design's MemoryError names
 * it, and whether the caller may recover (the same call may succeed after
 * it changes its input or waits): from the status name. */
static const char *error_kind(const char *code, int *recoverable)
{
    static const struct {
        const char *code, *kind;
        int recoverable;
    } kinds[] = {
        {"usage", "INVALID_QUERY", 1},         {"CAIRN_EINVAL", "INVALID_QUERY", 1},
        {"CAIRN_EQUERY", "INVALID_QUERY", 1},  {"CAIRN_ETOOBIG", "INVALID_QUERY", 1},
        {"CAIRN_ENOTFOUND", "INVALID_QUERY", 1}, {"CAIRN_EEXIST", "INVALID_QUERY", 1},
        {"CAIRN_EPERM", "PERMISSION_DENIED", 0}, {"CAIRN_ELOCKED", "DB_UNAVAILABLE", 1},
        {"CAIRN_EIO", "DB_UNAVAILABLE", 1},    {"CAIRN_EFULL", "DB_UNAVAILABLE", 1},
        {"CAIRN_ENOMEM", "DB_UNAVAILABLE", 1}, {"CAIRN_EUNAVAIL", "DB_UNAVAILABLE", 1},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].code, code) == 0) {
            *recoverable = kinds[i].recoverable;
            return kinds[i].kind;
        }
    *recoverable = 0; /* corrupt, checksum, version, a dead handle */
    return "DB_UNAVAILABLE";
}

/* Set by cli_fail_kind for the one report it makes. */
static const char *kind_override;

/* One error on stderr: "cairn: CMD: message (CODE)" (usage errors without
 * the code), or with JSON asked for, one line
 * {"error":{"command","code","kind","recoverable","message","exit"}}. */
static int report(const char *cmd, const char *code, int exit_code, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fflush(stdout);
    if (json_errors) {
        cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
        char *s;
        cJSON_AddStringToObject(e, "command", cmd);
        int recoverable;
        const char *kind = error_kind(code, &recoverable);
        cJSON_AddStringToObject(e, "code", code);
        cJSON_AddStringToObject(e, "kind", kind_override ? kind_override : kind);
        cJSON_AddBoolToObject(e, "recoverable", recoverable);
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddNumberToObject(e, "exit", exit_code);
        if ((s = cJSON_PrintUnformatted(o)) != NULL)
            fprintf(stderr, "%s\n", s);
        free(s);
        cJSON_Delete(o);
    } else if (exit_code == CLI_EXIT_USAGE) {
        fprintf(stderr, "cairn: %s: %s\n", cmd, msg);
    } else {
        fprintf(stderr, "cairn: %s: %s (%s)\n", cmd, msg, code);
    }
    return exit_code;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = report(cmd, "usage", CLI_EXIT_USAGE, fmt, ap);
    va_end(ap);
    return rc;
}

int cli_fail(const char *cmd, int code, const char *fmt, ...)
{
    char name[32];
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = report(cmd, cli_code_name(code, name, sizeof name), CLI_EXIT_FAIL, fmt, ap);
    va_end(ap);
    return rc;
}

int cli_fail_kind(const char *cmd, int code, const char *kind, const char *fmt, ...)
{
    char name[32];
    va_list ap;
    int rc;
    va_start(ap, fmt);
    kind_override = kind;
    rc = report(cmd, cli_code_name(code, name, sizeof name), CLI_EXIT_FAIL, fmt, ap);
    kind_override = NULL;
    va_end(ap);
    return rc;
}

int cli_fail_db(const char *cmd, cairn_db *db, int code, const char *prefix)
{
    const char *msg = db ? cairn_errmsg(db) : "";

    if (msg == NULL || msg[0] == '\0') {
        /* No detail on the handle: use the sentence of the status. */
        const char *s = cairn_strerror(code);
        const char *colon = strchr(s, ':');
        msg = colon ? colon + 2 : s;
    }
    if (prefix != NULL)
        return cli_fail(cmd, code, "%s: %s", prefix, msg);
    return cli_fail(cmd, code, "%s", msg);
}

int cli_parse_where(const char *cmd, const char *arg, char *buf, size_t cap, cairn_where *w)
{
    size_t n = strcspn(arg, "=<>");
    const char *v;
    if (arg[n] == 0 || n == 0)
        return cli_usage_error(cmd, "--where wants PATH=VALUE, PATH>=N or PATH<=N, not '%s'", arg);
    if (n >= cap)
        return cli_usage_error(cmd, "--where: path longer than %zu bytes", cap - 1);
    memcpy(buf, arg, n);
    buf[n] = 0;
    w->path = buf;
    if (arg[n] == '=') {
        w->op = CAIRN_WHERE_EQ;
        v = arg + n + 1;
    } else if (arg[n + 1] == '=') {
        w->op = arg[n] == '>' ? CAIRN_WHERE_GE : CAIRN_WHERE_LE;
        v = arg + n + 2;
    } else {
        return cli_usage_error(cmd, "--where: '%c' alone is no operator (use %c=)", arg[n], arg[n]);
    }
    w->value = v;
    return -1;
}

/* ---- option parsing ------------------------------------------------------ */

void cli_args_init(cli_args *a, cli_ctx *ctx, const cli_optspec *spec, int argc, char **argv)
{
    a->ctx = ctx;
    a->spec = spec;
    a->argc = argc;
    a->argv = argv;
    a->i = 0;
    a->opts_end = 0;
}

int cli_args_next(cli_args *a, const char **name, const char **value)
{
    static const cli_optspec store_opt = {"store", 1}, busy_opt = {"busy-timeout", 1};

    *name = NULL;
    *value = NULL;
    while (a->i < a->argc) {
        const char *arg = a->argv[a->i++];
        const cli_optspec *o = NULL;
        const char *eq;
        size_t n;

        if (a->opts_end || arg[0] != '-') {
            *value = arg;
            return CLI_ARG_POS;
        }
        if (strcmp(arg, "--") == 0) {
            a->opts_end = 1;
            continue;
        }
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
            return CLI_ARG_HELP;
        if (arg[1] != '-') {
            /* A single dash: "-5" is JSON; leave it to the command. */
            *value = arg;
            return CLI_ARG_POS;
        }
        eq = strchr(arg + 2, '=');
        n = eq ? (size_t)(eq - (arg + 2)) : strlen(arg + 2);
        if (n == 5 && strncmp(arg + 2, "store", 5) == 0)
            o = &store_opt;
        else if (n == 12 && strncmp(arg + 2, "busy-timeout", 12) == 0)
            o = &busy_opt;
        for (const cli_optspec *s = a->spec; o == NULL && s && s->name; s++)
            if (strlen(s->name) == n && strncmp(arg + 2, s->name, n) == 0)
                o = s;
        if (o == NULL) {
            cli_usage_error(a->ctx->cmd, "unknown option '%.*s' (see 'cairn help %s')",
                            (int)(n + 2), arg, a->ctx->cmd);
            return CLI_ARG_ERR;
        }
        if (!o->has_arg && eq) {
            cli_usage_error(a->ctx->cmd, "option '--%s' takes no value", o->name);
            return CLI_ARG_ERR;
        }
        if (o->has_arg) {
            if (eq) {
                *value = eq + 1;
            } else if (a->i < a->argc) {
                *value = a->argv[a->i++];
            } else {
                cli_usage_error(a->ctx->cmd, "option '--%s' needs a value", o->name);
                return CLI_ARG_ERR;
            }
        }
        if (o == &store_opt) {
            if ((*value)[0] == '\0') {
                cli_usage_error(a->ctx->cmd, "option '--store' needs a directory");
                return CLI_ARG_ERR;
            }
            a->ctx->store = *value;
            continue;
        }
        if (o == &busy_opt) {
            char *end;
            long ms;
            errno = 0;
            ms = strtol(*value, &end, 10);
            if (errno != 0 || end == *value || *end != '\0' || ms < 0 || ms > 86400000) {
                cli_usage_error(a->ctx->cmd, "--busy-timeout needs milliseconds, 0..86400000");
                return CLI_ARG_ERR;
            }
            a->ctx->busy_timeout_ms = ms == 0 ? 1u : (unsigned)ms; /* 0: do not wait */
            continue;
        }
        *name = o->name;
        return CLI_ARG_OPT;
    }
    return CLI_ARG_END;
}

int cli_help(const char *text)
{
    fputs(text, stdout);
    return CLI_EXIT_OK;
}

/* ---- opening a store ------------------------------------------------------ */

void cli_options(const cli_ctx *ctx, cairn_options *o)
{
    cairn_options def = CAIRN_OPTIONS_INIT;
    *o = def;
    o->busy_timeout_ms = ctx->busy_timeout_ms;
}

int cli_open_read(const cli_ctx *ctx, cairn_db **out)
{
    cairn_options o;
    char err[CAIRN_ERRMSG_MAX];
    int rc;

    cli_options(ctx, &o);
    o.read_only = 1;
    o.background = 1; /* read-only: only lets a long fold index text on a thread */
    err[0] = '\0';
    rc = cairn_open(out, ctx->store, &o, err, sizeof err);
    if (rc == CAIRN_ENOTFOUND)
        cli_fail(ctx->cmd, rc, "no store at %s (run 'cairn init')", ctx->store);
    else if (rc != CAIRN_OK)
        cli_fail(ctx->cmd, rc, "%s", err[0] ? err : ctx->store);
    return rc;
}

void cli_warn_recovery(const cli_ctx *ctx, cairn_db *db)
{
    cairn_stats rs;

    if (cairn_stats_get(db, &rs) != CAIRN_OK)
        return;
    /* Recovery never deletes valid records, but the operator must know
     * when it had to move some aside, or found some gone. */
    if (rs.recovered_set_aside_bytes > 0)
        fprintf(stderr,
                "cairn: %s: warning: recovery found a damaged record with valid records after "
                "it and moved %llu bytes to a .damaged file in %s; run 'cairn verify'\n",
                ctx->cmd, (unsigned long long)rs.recovered_set_aside_bytes, ctx->store);
    if (rs.recovered_lost_last > 0)
        fprintf(stderr,
                "cairn: %s: warning: the log of %s no longer holds records the MANIFEST "
                "recorded as durable: records %llu..%llu are lost (their numbers are retired, "
                "never given again; index files folded over them were removed)\n",
                ctx->cmd, ctx->store, (unsigned long long)rs.recovered_lost_first,
                (unsigned long long)rs.recovered_lost_last);
}

/* ---- files ----------------------------------------------------------------- */

/* Why a file that is not a regular one is skipped, for the report. */
static const char *file_kind(mode_t m)
{
    return S_ISDIR(m)    ? "not a regular file (a directory)"
           : S_ISFIFO(m) ? "not a regular file (a FIFO)"
           : S_ISCHR(m)  ? "not a regular file (a character device)"
           : S_ISBLK(m)  ? "not a regular file (a block device)"
           : S_ISSOCK(m) ? "not a regular file (a socket)"
                         : "not a regular file";
}

/* All of the regular file at path (symbolic links followed) into *out
 * (NUL-terminated, *len bytes). Nothing here can block: anything that is
 * not a regular file by stat() is not opened (a device's open can act),
 * and the open is O_NONBLOCK, so a FIFO swapped in after the stat opens at
 * once and fstat() turns it away. Returns 0; 1 when it is not a regular
 * file (*kind: why it is skipped); -1 with errno when it cannot be read. */
int cli_read_regular(const char *path, char **out, size_t *len, const char **kind)
{
    struct stat st;
    char *p = NULL;
    size_t n = 0, cap;
    int fd, e;

    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISREG(st.st_mode)) {
        *kind = file_kind(st.st_mode);
        return 1;
    }
    if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY)) < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        e = errno;
        *kind = file_kind(st.st_mode);
        close(fd);
        errno = e;
        return S_ISREG(st.st_mode) ? -1 : 1;
    }
    /* its size, the NUL and one byte more: the read that sees the end */
    cap = st.st_size > 0 && (uint64_t)st.st_size < SIZE_MAX / 2 ? (size_t)st.st_size + 2 : 4096;
    for (;;) {
        ssize_t r;
        if (p == NULL || n + 1 >= cap) {
            char *q = p == NULL ? malloc(cap) : cap < SIZE_MAX / 2 ? realloc(p, cap *= 2) : NULL;
            if (q == NULL) {
                free(p);
                close(fd);
                errno = ENOMEM;
                return -1;
            }
            p = q;
        }
        r = read(fd, p + n, cap - n - 1);
        if (r == 0)
            break;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            e = errno;
            free(p);
            close(fd);
            errno = e;
            return -1;
        }
        n += (size_t)r;
    }
    close(fd);
    p[n] = 0;
    *out = p;
    *len = n;
    return 0;
}

/* ---- values ------------------------------------------------------------- */

int64_t cli_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void cli_format_time(int64_t ms, char *buf, size_t len)
{
    cairn__iso_time(ms, buf, len);
}

/* Exactly n decimal digits at *p into *out; advances *p. */
static int fixed_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int parse_iso(const char *s, int64_t *out_ms)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = s;
    int y, mo, d, h = 0, mi = 0, sec = 0, ms = 0, off = 0;

    if (fixed_digits(&p, 4, &y) || *p++ != '-' || fixed_digits(&p, 2, &mo) || *p++ != '-' ||
        fixed_digits(&p, 2, &d))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && is_leap(y)))
        return -1;
    if (*p == 'T' || *p == 't' || *p == ' ') {
        p++;
        if (fixed_digits(&p, 2, &h) || *p++ != ':' || fixed_digits(&p, 2, &mi))
            return -1;
        if (*p == ':') {
            p++;
            if (fixed_digits(&p, 2, &sec))
                return -1;
            if (*p == '.' || *p == ',') {
                int scale = 100;
                p++;
                if (*p < '0' || *p > '9')
                    return -1;
                for (; *p >= '0' && *p <= '9'; p++, scale /= 10)
                    ms += (*p - '0') * scale; /* digits past the third add 0 */
            }
        }
        if (h > 23 || mi > 59 || sec > 59)
            return -1;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om = 0;
        if (fixed_digits(&p, 2, &oh))
            return -1;
        if (*p == ':') {
            p++;
            if (fixed_digits(&p, 2, &om))
                return -1;
        } else if (*p != '\0' && fixed_digits(&p, 2, &om)) {
            return -1;
        }
        if (oh > 23 || om > 59)
            return -1;
        off = sign * (oh * 60 + om);
    }
    if (*p != '\0')
        return -1;
    *out_ms = ((cairn__days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + sec -
                (int64_t)off * 60) *
               1000) +
              ms;
    return 0;
}

int cli_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;

    if (*s == '\0')
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        if (v > (max - (uint64_t)(*s - '0')) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 0;
}

int cli_parse_time(const char *s, int64_t now_ms, int64_t *out_ms)
{
    static const struct {
        const char *suffix;
        uint64_t ms;
    } units[] = {{"ms", 1},         {"s", 1000},        {"m", 60000},
                 {"h", 3600000},    {"d", 86400000},    {"w", 604800000}};
    uint64_t v;

    if (strcmp(s, "now") == 0) {
        *out_ms = now_ms;
        return 0;
    }
    if (s[0] == '@') {
        int neg = s[1] == '-';
        if (cli_parse_u64(s + 1 + neg, (uint64_t)INT64_MAX, &v) != 0)
            return -1;
        *out_ms = neg ? -(int64_t)v : (int64_t)v;
        return 0;
    }
    if (parse_iso(s, out_ms) == 0)
        return 0;
    /* A duration: digits then a unit. */
    {
        size_t nd = strspn(s, "0123456789");
        char num[24];
        if (nd == 0 || nd >= sizeof num)
            return -1;
        memcpy(num, s, nd);
        num[nd] = '\0';
        if (cli_parse_u64(num, (uint64_t)INT64_MAX, &v) != 0)
            return -1;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
            if (strcmp(s + nd, units[i].suffix) != 0)
                continue;
            if (v > (uint64_t)INT64_MAX / units[i].ms)
                return -1;
            v *= units[i].ms;
            if (now_ms < INT64_MIN + (int64_t)v)
                return -1;
            *out_ms = now_ms - (int64_t)v;
            return 0;
        }
    }
    return -1;
}

int cli_parse_size(const char *s, uint64_t *out)
{
    size_t nd = strspn(s, "0123456789");
    const char *u = s + nd;
    uint64_t v, mult = 1;
    char num[24];

    if (nd == 0 || nd >= sizeof num)
        return -1;
    memcpy(num, s, nd);
    num[nd] = '\0';
    if (cli_parse_u64(num, UINT64_MAX, &v) != 0)
        return -1;
    switch (*u) {
    case 'k': case 'K': mult = 1ull << 10; u++; break;
    case 'm': case 'M': mult = 1ull << 20; u++; break;
    case 'g': case 'G': mult = 1ull << 30; u++; break;
    default: break;
    }
    if (mult > 1 && (*u == 'i' || *u == 'I'))
        u++;
    if (*u == 'b' || *u == 'B')
        u++;
    if (*u != '\0' || v > UINT64_MAX / mult)
        return -1;
    *out = v * mult;
    return 0;
}

const char *cli_durability_name(cairn_durability d)
{
    switch (d) {
    case CAIRN_DURABILITY_NONE: return "none";
    case CAIRN_DURABILITY_BATCH: return "batch";
    case CAIRN_DURABILITY_FULL: return "full";
    default: return "stored";
    }
}

int cli_parse_format(const char *cmd, const char *v, int *json)
{
    if (strcmp(v, "json") == 0)
        *json = 1;
    else if (strcmp(v, "text") == 0)
        *json = 0;
    else
        return cli_usage_error(cmd, "--format must be text or json, not '%s'", v);
    return -1;
}

int cli_output_args(cli_ctx *ctx, const cli_optspec *spec, int argc, char **argv,
                    const char *help, int *json)
{
    const char *name, *val;
    cli_args a;
    int r;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(help);
        if (r == CLI_ARG_POS)
            return cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
        if (json != NULL && strcmp(name, "json") == 0)
            *json = 1;
        if (json != NULL && strcmp(name, "format") == 0 &&
            (r = cli_parse_format(ctx->cmd, val, json)) >= 0)
            return r;
    }
    return -1;
}

void cli_stop_signals(void (*handler)(int), sigset_t *wait_mask)
{
    static const int stop[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    sigset_t set;

    sigemptyset(&set);
    for (size_t i = 0; i < sizeof stop / sizeof *stop; i++)
        sigaddset(&set, stop[i]);
    pthread_sigmask(SIG_BLOCK, &set, wait_mask);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof stop / sizeof *stop; i++) {
        sigdelset(wait_mask, stop[i]);
        sigaction(stop[i], &sa, NULL);
    }
    signal(SIGPIPE, SIG_IGN);
}
