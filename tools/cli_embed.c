/*
 * cli_embed.c - see cli_embed.h. The program runs through cli_proc_run.
 */
#include "cli_embed.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_proc.h"

/* The texts as JSON lines. */
static char *input_lines(const char *const *texts, const size_t *lens, size_t n, size_t *len)
{
    size_t cap = 1024, k = 0;
    char *b = malloc(cap);
    for (size_t i = 0; b != NULL && i < n; i++) {
        cJSON *s;
        char *j, *t = malloc(lens[i] + 1);
        size_t jl;
        if (t == NULL) {
            free(b);
            return NULL;
        }
        memcpy(t, texts[i], lens[i]);
        t[lens[i]] = 0;
        s = cJSON_CreateString(t);
        free(t);
        j = s ? cJSON_PrintUnformatted(s) : NULL;
        cJSON_Delete(s);
        if (j == NULL) {
            free(b);
            return NULL;
        }
        jl = strlen(j);
        if (k + jl + 1 > cap) {
            char *nb;
            while (k + jl + 1 > cap)
                cap *= 2;
            if ((nb = realloc(b, cap)) == NULL) {
                free(j);
                free(b);
                return NULL;
            }
            b = nb;
        }
        memcpy(b + k, j, jl);
        b[k + jl] = '\n';
        k += jl + 1;
        free(j);
    }
    *len = k;
    return b;
}

int cli_embed_cmd_batch(void *user, const char *const *texts, const size_t *lens, size_t n,
                        float *out, char *err)
{
    cli_embedder *ce = user;
    size_t in_len = 0, out_len = 0, at = 0, line = 0;
    char *in = input_lines(texts, lens, n, &in_len), *ans = NULL;
    int rc;

    if (in == NULL) {
        snprintf(err, CAIRN_ERRMSG_MAX, "no memory");
        return 1;
    }
    rc = cli_proc_run(ce->cmd, in, in_len, ce->timeout_ms, &ans, &out_len, err);
    free(in);
    if (rc != 0)
        return rc;
    while (rc == 0 && at < out_len) {
        size_t end = at, got = 0;
        char why[160];
        while (end < out_len && ans[end] != '\n')
            end++;
        if (end > at && !(end == at + 1 && ans[at] == '\r')) {
            if (line == n) {
                snprintf(err, CAIRN_ERRMSG_MAX, "more answers than the %zu texts it was given", n);
                rc = 1;
            } else if (cairn_parse_vector(ans + at, end - at, out + line * ce->e.dim, ce->e.dim,
                                          &got, why, sizeof why) != CAIRN_OK) {
                snprintf(err, CAIRN_ERRMSG_MAX, "answer %zu: %s", line + 1, why);
                rc = 1;
            } else if (got != ce->e.dim) {
                snprintf(err, CAIRN_ERRMSG_MAX, "answer %zu has %zu values, not %u", line + 1,
                         got, ce->e.dim);
                rc = 1;
            }
            line++;
        }
        at = end + 1;
    }
    if (rc == 0 && line != n) {
        snprintf(err, CAIRN_ERRMSG_MAX, "%zu answers for %zu texts", line, n);
        rc = 1;
    }
    free(ans);
    return rc;
}

/* The number of values the program answers with: asked once. */
static int probe_dim(cli_embedder *ce, char *err)
{
    static const char *const probe[] = {"dimension probe"};
    static const size_t plen[] = {15};
    float *v = malloc(65536 * sizeof *v);
    char *in = NULL, *ans = NULL, why[160];
    size_t il = 0, ol = 0, n = 0;
    int rc = 1;

    in = v ? input_lines(probe, plen, 1, &il) : NULL;
    if (in == NULL)
        snprintf(err, CAIRN_ERRMSG_MAX, "no memory");
    else if ((rc = cli_proc_run(ce->cmd, in, il, ce->timeout_ms, &ans, &ol, err)) == 0) {
        size_t end = 0;
        while (end < ol && ans[end] != '\n')
            end++;
        if (cairn_parse_vector(ans, end, v, 65536, &n, why, sizeof why) != CAIRN_OK) {
            snprintf(err, CAIRN_ERRMSG_MAX, "answer 1: %s", why);
            rc = 1;
        }
    }
    free(in);
    free(ans);
    free(v);
    if (rc == 0)
        ce->e.dim = (uint32_t)n;
    return rc;
}

int cli_embedder_attach(const cli_ctx *ctx, cairn_mem *mem, cli_embedder *ce, int quiet_mismatch)
{
    char sname[CAIRN_EMBEDDER_NAME_MAX + 1], err[CAIRN_ERRMSG_MAX];
    uint32_t sdim = 0;
    int rc;

    memset(ce, 0, sizeof *ce);
    if (ctx->no_embed)
        return CLI_EXIT_OK;
    ce->timeout_ms = ctx->embed_timeout_ms > 0 ? ctx->embed_timeout_ms : 30000;
    cairn_mem_vectors(mem, sname, &sdim, NULL);
    /* No embedder named and a store without vectors: lexical only. Vectors
     * are about 3 KiB a memory, and the built-in embedder ranked as BM25
     * alone on every benchmark (README "Hybrid recall"): a store has them
     * only when someone asked for them. */
    if (ctx->embed_cmd == NULL && !ctx->embed_builtin && sdim == 0)
        return CLI_EXIT_OK;
    if (ctx->embed_cmd == NULL) {
        rc = cairn_hash_embedder(&ce->e, 0);
        if (rc != CAIRN_OK)
            return cli_fail(ctx->cmd, rc, "the built-in embedder");
        if (!ctx->embed_builtin && strcmp(sname, ce->e.name) != 0) {
            /* The store's vectors come from a program: it must be named. */
            cli_embedder_done(ce);
            if (quiet_mismatch)
                return CLI_EXIT_OK;
            return cli_fail(ctx->cmd, CAIRN_EINVAL, "the store's vectors come from the embedder "
                            "\"%s\" (%u dimensions): name it with --embed-cmd CMD "
                            "--embed-name '%s', or pass --no-embed",
                            sname, (unsigned)sdim, sname);
        }
    } else {
        ce->cmd = ctx->embed_cmd;
        snprintf(ce->name, sizeof ce->name, "%s",
                 ctx->embed_name ? ctx->embed_name : ctx->embed_cmd);
        ce->e.name = ce->name;
        ce->e.user = ce;
        ce->e.embed_batch = cli_embed_cmd_batch;
        if (sdim != 0 && strcmp(sname, ce->name) == 0)
            ce->e.dim = sdim; /* the store knows it */
        else if (probe_dim(ce, err) != 0)
            return cli_fail(ctx->cmd, CAIRN_EIO, "--embed-cmd: %s", err);
    }
    rc = cairn_mem_set_embedder(mem, &ce->e);
    if (rc != CAIRN_OK) {
        if (quiet_mismatch) {
            cli_embedder_done(ce);
            return CLI_EXIT_OK;
        }
        rc = cli_fail(ctx->cmd, rc, "%s (pass the store's embedder with --embed-cmd and "
                      "--embed-name, or --no-embed)", cairn_mem_errmsg(mem));
        cli_embedder_done(ce);
        return rc;
    }
    return CLI_EXIT_OK;
}

void cli_embedder_done(cli_embedder *ce)
{
    if (ce->cmd == NULL && ce->e.dim != 0)
        cairn_hash_embedder_free(&ce->e);
    memset(ce, 0, sizeof *ce);
}
