/*
 * cli_proc.c - see cli_proc.h. The program is driven through two pipes with
 * poll(), writing its input while reading its output, so a program that
 * answers before it has read everything cannot deadlock us.
 */
#include "cli_proc.h"

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

#include "cairn.h"

#define OUT_MAX (256u << 20) /* the program's answer: at most 256 MiB */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cli_proc_run(const char *cmd, const char *in, size_t in_len, int timeout_ms, char **out,
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
    /* A program that exits without reading its input must make write()
     * fail with EPIPE, not kill the tool: SIGPIPE is ignored while we feed
     * it (restored below). */
    struct sigaction ign, old_pipe;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    (void)sigaction(SIGPIPE, &ign, &old_pipe);
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
    (void)sigaction(SIGPIPE, &old_pipe, NULL);
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
    if (got == cap) { /* room for the NUL */
        char *nb = realloc(buf, cap + 1);
        if (nb == NULL) {
            free(buf);
            snprintf(err, CAIRN_ERRMSG_MAX, "no memory");
            return 1;
        }
        buf = nb;
    }
    buf[got] = 0;
    *out = buf;
    *out_len = got;
    return 0;
}

