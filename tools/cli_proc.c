/*
 * cli_proc.c - see cli_proc.h. The program is driven through two pipes with
 * poll(), writing its input while reading its output, so a program that
 * answers before it has read everything cannot deadlock us.
 *
 * The program runs in a process group of its own, so that what it starts
 * (a script's `sleep`, a pipeline's other stages) can be stopped with it:
 * on a timeout or any other failure the whole group gets SIGKILL. Its own
 * exit is what ends a run, not the end of its output: when it has exited
 * but a process it left behind still holds the output pipe, what it wrote
 * is read and that group is killed too, instead of waiting for the pipe to
 * close. (The price of the group of its own: the terminal's ^C reaches
 * the tool, not the program; the tool dies, and the program sees its pipes
 * close.)
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
#define SLICE_MS 100         /* how often to look whether it has exited */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether pid has exited, without reaping it: while it is a zombie its
 * process group id cannot be reused, so kill(-pid) reaches only its group. */
static int has_exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return errno == ECHILD; /* reaped by someone else (SIGCHLD ignored) */
    return si.si_pid == pid;
}

int cli_proc_run(const char *cmd, const char *in, size_t in_len, int timeout_ms, char **out,
               size_t *out_len, char *err)
{
    int to[2] = {-1, -1}, from[2] = {-1, -1}, status = 0, rc = 0, eof = 0, held = 0, nap = 1;
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
        (void)setpgid(0, 0); /* a group of its own (and its children's) */
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
    (void)setpgid(pid, pid); /* here too, so the group exists before any kill */
    (void)fcntl(to[1], F_SETFL, O_NONBLOCK);
    (void)fcntl(from[0], F_SETFL, O_NONBLOCK);
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
        int np = 0, gone, left = (int)(deadline - mono_ms());
        if (left <= 0) {
            snprintf(err, CAIRN_ERRMSG_MAX, "%s within %d ms (--embed-timeout)",
                     eof ? "its output ended but it did not exit" : "no answer", timeout_ms);
            rc = 1;
            break;
        }
        if (eof) { /* its output has ended: wait (within the deadline) for its exit */
            if (has_exited(pid))
                break;
            (void)poll(NULL, 0, nap < left ? nap : left);
            nap = nap < SLICE_MS / 2 ? nap * 2 : SLICE_MS;
            continue;
        }
        /* Exited: everything it wrote is in the pipe; read that, then stop. */
        gone = has_exited(pid);
        if (gone && to[1] >= 0) {
            close(to[1]);
            to[1] = -1;
        }
        p[np].fd = from[0];
        p[np++].events = POLLIN;
        if (to[1] >= 0) {
            p[np].fd = to[1];
            p[np++].events = POLLOUT;
        }
        if (poll(p, (nfds_t)np, gone ? 0 : left < SLICE_MS ? left : SLICE_MS) < 0) {
            if (errno == EINTR)
                continue;
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
        if (gone && !(p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            held = 1; /* what it left running holds the pipe open */
            break;
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
                eof = 1; /* end of its output */
            else if (r > 0)
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
    /* Failed, or exited leaving something behind on its output: stop all of
     * it, before the reaping below frees its process group id. */
    if ((rc != 0 || held) && kill(-pid, SIGKILL) != 0)
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

