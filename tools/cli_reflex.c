/*
 * cli_reflex.c - helpers of the reflexion commands (see cli_reflex.h).
 *
 * Option errors follow ReflexionMemory's PowerShell validation messages ("Cannot
 * validate argument on parameter 'MaxResults'. ...") on the tool's one
 * error line, after the option's own name, and exit 64 like every other
 * usage error of the tool.
 */
#include "cli_reflex.h"
#include "render.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_json.h"

/* ---- subcommands ---------------------------------------------------------- */

int cli_subcommand(cli_ctx *ctx, const char *group_help, const cli_subcmd *subs, int argc,
                   char **argv)
{
    const char *group = ctx->cmd;
    int i = 0;

    while (i < argc) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return cli_help(group_help);
        if (strcmp(a, "--store") == 0 || strncmp(a, "--store=", 8) == 0) {
            const char *v = a[7] == '=' ? a + 8 : (i + 1 < argc ? argv[++i] : NULL);
            if (v == NULL || v[0] == '\0')
                return cli_usage_error(group, "option '--store' needs a directory");
            ctx->store = v;
            i++;
            continue;
        }
        break;
    }
    if (i == argc) {
        char names[160] = "";
        for (const cli_subcmd *s = subs; s->name; s++) {
            if (s != subs)
                strncat(names, s[1].name ? ", " : " or ", sizeof names - strlen(names) - 1);
            strncat(names, s->name, sizeof names - strlen(names) - 1);
        }
        return cli_usage_error(group, "missing subcommand: %s (see 'cairn help %s')", names,
                               group);
    }
    for (const cli_subcmd *s = subs; s->name; s++) {
        if (strcmp(s->name, argv[i]) == 0) {
            ctx->cmd = s->full;
            return s->run(ctx, argc - i - 1, argv + i + 1);
        }
    }
    if (argv[i][0] == '-')
        return cli_usage_error(group, "unknown option '%s' (see 'cairn help %s')", argv[i],
                               group);
    return cli_usage_error(group, "unknown subcommand '%s' (see 'cairn help %s')", argv[i],
                           group);
}

/* ---- the store and its reflexion state ------------------------------------ */

int cli_reflex_open(cli_ctx *ctx, int write, cairn_db **db, cairn_reflex **r)
{
    cairn_reflex_status st;
    int rc;

    *db = NULL;
    *r = NULL;
    if (write) {
        cairn_options o = CAIRN_OPTIONS_INIT;
        char err[CAIRN_ERRMSG_MAX] = "";
        o.create = 1;
        o.busy_timeout_ms = ctx->busy_timeout_ms;
        rc = cairn_open(db, ctx->store, &o, err, sizeof err);
        if (rc != CAIRN_OK)
            return cli_fail(ctx->cmd, rc, "%s", err[0] ? err : ctx->store);
        cli_warn_recovery(ctx, *db);
    } else if (cli_open_read(ctx, db) != CAIRN_OK) {
        return CLI_EXIT_FAIL;
    }
    rc = cairn_reflex_open(*db, r);
    if (rc != CAIRN_OK) {
        int x = cli_fail_db(ctx->cmd, *db, rc, "opening the reflexion state");
        cairn_close(*db);
        *db = NULL;
        *r = NULL;
        return x;
    }
    if (cairn_reflex_status_get(*r, &st) == CAIRN_OK && st.skipped > 0)
        fprintf(stderr,
                "cairn: %s: warning: %llu reflexion record(s) in the log could not be applied "
                "and were skipped\n",
                ctx->cmd, (unsigned long long)st.skipped);
    return CLI_EXIT_OK;
}

int cli_reflex_close(cli_ctx *ctx, cairn_db *db, cairn_reflex *r, int exit_code)
{
    int rc;

    cairn_reflex_close(r);
    rc = cairn_close(db);
    if (rc != CAIRN_OK && exit_code == CLI_EXIT_OK)
        return cli_fail_db(ctx->cmd, NULL, rc, "closing the store");
    return exit_code;
}

int cli_reflex_fail(cli_ctx *ctx, cairn_reflex *r, int code, const char *prefix)
{
    const char *m = r ? cairn_reflex_errmsg(r) : "";

    if (m == NULL || m[0] == '\0') {
        const char *s = cairn_strerror(code), *colon = strchr(s, ':');
        m = colon ? colon + 2 : s;
    }
    if (prefix != NULL)
        return cli_fail(ctx->cmd, code, "%s: %s", prefix, m);
    return cli_fail(ctx->cmd, code, "%s", m);
}

int cli_reflex_arg(cli_ctx *ctx, int x, const char *name, const char *val, const char *help,
                   int *json, int *rc)
{
    if (x == CLI_ARG_ERR)
        *rc = CLI_EXIT_USAGE;
    else if (x == CLI_ARG_HELP)
        *rc = cli_help(help);
    else if (x == CLI_ARG_POS)
        *rc = cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
    else if (strcmp(name, "format") == 0)
        *rc = cli_parse_format(ctx->cmd, val, json);
    else
        return 0;
    return 1;
}

/* ---- option values ---------------------------------------------------------- */

/* "max-results" -> "MaxResults": ReflexionMemory's name of the parameter. */
static void pascal(const char *opt, char *buf, size_t len)
{
    size_t o = 0;
    int up = 1;

    for (; *opt && o + 1 < len; opt++) {
        if (*opt == '-') {
            up = 1;
            continue;
        }
        buf[o++] = up && *opt >= 'a' && *opt <= 'z' ? (char)(*opt - 'a' + 'A') : *opt;
        up = 0;
    }
    buf[o] = '\0';
}

static int range_error(const char *cmd, const char *opt, const char *v, const char *range)
{
    char p[64];
    pascal(opt, p, sizeof p);
    return cli_usage_error(cmd,
                           "--%s: Cannot validate argument on parameter '%s'. The argument "
                           "'%s' is not in the range %s.",
                           opt, p, v, range);
}

int cli_opt_double(const char *cmd, const char *opt, const char *v, double lo, double hi,
                   double *out)
{
    char *end = NULL, range[64];
    double d;

    errno = 0;
    d = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || errno != 0 || isnan(d) || d < lo || d > hi) {
        snprintf(range, sizeof range, "%g-%g", lo, hi);
        return range_error(cmd, opt, v, range);
    }
    *out = d;
    return -1;
}

int cli_opt_uint(const char *cmd, const char *opt, const char *v, uint64_t lo, uint64_t hi,
                 uint64_t *out)
{
    uint64_t x;
    char range[64];

    if (cli_parse_u64(v, hi, &x) != 0 || x < lo) {
        snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)lo,
                 (unsigned long long)hi);
        return range_error(cmd, opt, v, range);
    }
    *out = x;
    return -1;
}

int cli_opt_time(const char *cmd, const char *opt, const char *v, int64_t *out_ms)
{
    if (cli_parse_time(v, cli_now_ms(), out_ms) != 0)
        return cli_usage_error(cmd,
                               "invalid time '%s' for --%s (ISO 8601, @<epoch ms>, now, or an "
                               "age: 30m, 2h, 7d)",
                               v, opt);
    return -1;
}

int cli_opt_nonempty(const char *cmd, const char *opt, const char *v)
{
    char p[64];

    if (v[0] != '\0')
        return -1;
    pascal(opt, p, sizeof p);
    return cli_usage_error(cmd,
                           "--%s: Cannot validate argument on parameter '%s'. The argument is "
                           "null or empty.",
                           opt, p);
}

int cli_opt_missing(const char *cmd, const char *opt)
{
    return cli_usage_error(cmd, "missing --%s (required)", opt);
}

/* ---- files and output ------------------------------------------------------- */

int cli_read_file(const char *path, char **out, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    char *p = NULL;
    size_t n = 0, cap = 0;
    int err = 0;

    *out = NULL;
    *len = 0;
    if (f == NULL)
        return -1;
    for (;;) {
        size_t got;
        if (cap - n < 65536 + 1) {
            size_t ncap = cap ? cap * 2 : 131072;
            char *q = ncap > cap ? realloc(p, ncap) : NULL;
            if (q == NULL) {
                err = ENOMEM;
                break;
            }
            p = q;
            cap = ncap;
        }
        got = fread(p + n, 1, 65536, f);
        n += got;
        if (got < 65536) {
            if (ferror(f))
                err = errno ? errno : EIO;
            break;
        }
    }
    if (f != stdin)
        fclose(f);
    if (err != 0) {
        free(p);
        errno = err;
        return -1;
    }
    p[n] = '\0';
    *out = p;
    *len = n;
    return 0;
}

void cli_print_json_text(const char *s)
{
    cli_json_put_compact(stdout, s, strlen(s));
    putchar('\n');
}

void cli_print_cjson(cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    if (s != NULL)
        printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
}

const char *cli_jstr(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}

cJSON *cli_json_str_array(char **s, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(s[i]));
    return a;
}

void cli_json_add_time(cJSON *o, const char *name, int64_t ms)
{
    cairn__json_add_time(o, name, ms);
}

void cli_print_kv(const cJSON *o)
{
    const cJSON *m, *x;
    int w = 0;

    cJSON_ArrayForEach(m, o)
        if ((int)strlen(m->string) > w)
            w = (int)strlen(m->string);
    cJSON_ArrayForEach(m, o) {
        printf("%s:%*s ", m->string, w - (int)strlen(m->string), "");
        if (cJSON_IsString(m)) {
            fputs(m->valuestring, stdout);
        } else if (cJSON_IsNull(m)) {
            fputs("-", stdout);
        } else if (cJSON_IsArray(m) && m->child == NULL) {
            fputs("-", stdout);
        } else if (cJSON_IsArray(m)) {
            cJSON_ArrayForEach(x, m)
                printf("%s%s", x == m->child ? "" : ", ",
                       cJSON_IsString(x) ? x->valuestring : "?");
        } else if (cJSON_IsRaw(m)) {
            fputs(m->valuestring, stdout); /* exact integers (cli_json_add_int) */
        } else if (cJSON_IsNumber(m)) {
            printf("%.6g", m->valuedouble);
        } else if (cJSON_IsBool(m)) {
            fputs(cJSON_IsTrue(m) ? "true" : "false", stdout);
        }
        putchar('\n');
    }
}

void cli_emit(cJSON *o, int json)
{
    if (json) {
        cli_print_cjson(o);
        return;
    }
    cli_print_kv(o);
    cJSON_Delete(o);
}
