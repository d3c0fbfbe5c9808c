/*
 * cli_progress.c - see cli_progress.h.
 */
#include "cli_progress.h"

#include <stdio.h>
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
