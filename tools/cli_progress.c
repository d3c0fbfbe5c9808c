/*
 * cli_progress.c - see cli_progress.h.
 */
#include "cli_progress.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void cli_progress_start(cli_progress *p, const char *label, size_t total)
{
    p->label = label;
    p->total = total;
    p->on = isatty(STDERR_FILENO) && !cli_json_errors() && total > 1;
    p->last_ms = 0;
}

void cli_progress_step(cli_progress *p, size_t done)
{
    enum { WIDTH = 30 };
    char bar[WIDTH + 1];
    long long t;
    size_t fill;
    if (!p->on)
        return;
    t = now_ms();
    if (done < p->total && t - p->last_ms < 100)
        return;
    p->last_ms = t;
    fill = p->total ? done * WIDTH / p->total : WIDTH;
    for (size_t i = 0; i < WIDTH; i++)
        bar[i] = i < fill ? '#' : ' ';
    bar[WIDTH] = 0;
    fprintf(stderr, "\r%s [%s] %3zu%% (%zu/%zu)", p->label, bar,
            p->total ? done * 100 / p->total : 100, done, p->total);
    fflush(stderr);
}

void cli_progress_end(cli_progress *p)
{
    if (!p->on || p->last_ms == 0)
        return;
    fputs("\r\033[K", stderr); /* back to the start, the line cleared */
    fflush(stderr);
}

struct cli_busy {
    const char *label;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    long long t0;
};

static void *busy_run(void *arg)
{
    struct cli_busy *b = arg;
    struct timespec until;
    pthread_mutex_lock(&b->mu);
    while (!b->stop) {
        long long t = now_ms() - b->t0;
        fprintf(stderr, "\r%s: %lld.%lld s", b->label, t / 1000, t / 100 % 10);
        fflush(stderr);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&b->cv, &b->mu, &until);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

struct cli_busy *cli_busy_start(const char *label)
{
    struct cli_busy *b;
    if (!isatty(STDERR_FILENO) || cli_json_errors() || (b = calloc(1, sizeof *b)) == NULL)
        return NULL;
    b->label = label;
    b->t0 = now_ms();
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    if (pthread_create(&b->thread, NULL, busy_run, b) != 0) {
        pthread_mutex_destroy(&b->mu);
        pthread_cond_destroy(&b->cv);
        free(b);
        return NULL;
    }
    return b;
}

void cli_busy_end(struct cli_busy *b)
{
    if (b == NULL)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    fputs("\r\033[K", stderr);
    fflush(stderr);
    free(b);
}
