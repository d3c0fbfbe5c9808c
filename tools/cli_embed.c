/*
 * cli_embed.c - see cli_embed.h. The external program is driven through
 * two pipes with poll(), writing its input while reading its output, so a
 * program that answers before it has read everything cannot deadlock us.
 */
#include "cli_embed.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUT_MAX (256u << 20) /* the program's answer: at most 256 MiB */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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

/* Run cmd with `in` on its stdin; its stdout into *out. 0, or a reason in err. */
static int run(const char *cmd, const char *in, size_t in_len, int timeout_ms, char **out,
               size_t *out_len, char *err)
{
    int to[2] = {-1, -1}, from[2] = {-1, -1}, status = 0, rc = 0;
    size_t sent = 0, got = 0, cap = 65536;
    int64_t deadline = mono_ms() + timeout_ms;
    char *buf = malloc(cap);
    pid_t pid;

    *out = NULL;
    if (buf == NULL || pipe(to) != 0 || pipe(from) != 0) {
        snprintf(err, CAIRN_ERRMSG_MAX, "cannot start the embedder: %s", strerror(errno));
        free(buf);
        for (int i = 0; i < 2; i++) {
            if (to[i] >= 0)
                close(to[i]);
            if (from[i] >= 0)
                close(from[i]);
        }
        return 1;
    }
    pid = fork();
    if (pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]);
        close(to[1]);
        close(from[0]);
        close(from[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    if (pid < 0) {
        snprintf(err, CAIRN_ERRMSG_MAX, "cannot start the embedder: %s", strerror(errno));
        close(to[1]);
        close(from[0]);
        free(buf);
        return 1;
    }
    (void)fcntl(to[1], F_SETFL, O_NONBLOCK);
    if (in_len == 0) {
        close(to[1]);
        to[1] = -1;
    }
    for (;;) {
        struct pollfd p[2];
        int np = 0, left = (int)(deadline - mono_ms());
        if (left <= 0) {
            snprintf(err, CAIRN_ERRMSG_MAX, "no answer within %d ms (--embed-timeout)", timeout_ms);
            rc = 1;
            break;
        }
        p[np].fd = from[0];
        p[np++].events = POLLIN;
        if (to[1] >= 0) {
            p[np].fd = to[1];
            p[np++].events = POLLOUT;
        }
        if (poll(p, (nfds_t)np, left) < 0 && errno != EINTR) {
            snprintf(err, CAIRN_ERRMSG_MAX, "poll: %s", strerror(errno));
            rc = 1;
            break;
        }
        if (np == 2 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = write(to[1], in + sent, in_len - sent);
            if (w > 0)
                sent += (size_t)w;
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || sent == in_len) {
                close(to[1]); /* done, or it stopped reading: end of its input */
                to[1] = -1;
            }
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r;
            if (got == cap) {
                char *nb = cap < OUT_MAX ? realloc(buf, cap * 2) : NULL;
                if (nb == NULL) {
                    snprintf(err, CAIRN_ERRMSG_MAX, "its answer is larger than %u MiB",
                             OUT_MAX >> 20);
                    rc = 1;
                    break;
                }
                buf = nb;
                cap *= 2;
            }
            r = read(from[0], buf + got, cap - got);
            if (r == 0)
                break; /* end of its output */
            if (r > 0)
                got += (size_t)r;
            else if (errno != EINTR && errno != EAGAIN) {
                snprintf(err, CAIRN_ERRMSG_MAX, "read: %s", strerror(errno));
                rc = 1;
                break;
            }
        }
    }
    if (to[1] >= 0)
        close(to[1]);
    close(from[0]);
    if (rc != 0)
        kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        if (WIFEXITED(status))
            snprintf(err, CAIRN_ERRMSG_MAX, "the program exited with status %d",
                     WEXITSTATUS(status));
        else
            snprintf(err, CAIRN_ERRMSG_MAX, "the program was killed by signal %d",
                     WTERMSIG(status));
        rc = 1;
    }
    if (rc != 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    *out_len = got;
    return 0;
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
    rc = run(ce->cmd, in, in_len, ce->timeout_ms, &ans, &out_len, err);
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
    else if ((rc = run(ce->cmd, in, il, ce->timeout_ms, &ans, &ol, err)) == 0) {
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
    if (ctx->embed_cmd == NULL) {
        rc = cairn_hash_embedder(&ce->e, 0);
        if (rc != CAIRN_OK)
            return cli_fail(ctx->cmd, rc, "the built-in embedder");
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
