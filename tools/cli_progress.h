/*
 * cli_progress.h - a progress bar on stderr for long work (a directory of
 * session logs, of markdown files), drawn only when stderr is a terminal
 * and errors are not asked for as JSON: a pipe or a file gets no bar.
 */
#ifndef CAIRN_CLI_PROGRESS_H
#define CAIRN_CLI_PROGRESS_H

#include <stddef.h>

typedef struct cli_progress {
    const char *label;
    size_t total;
    int on;                 /* stderr is a terminal */
    long long last_ms;      /* when it was last drawn */
} cli_progress;

/* Start (draws nothing yet). */
void cli_progress_start(cli_progress *p, const char *label, size_t total);

/* done of total are done: redrawn at most every 100 ms, and at the end. */
void cli_progress_step(cli_progress *p, size_t done);

/* Clear the line, so what follows starts on a clean one. */
void cli_progress_end(cli_progress *p);

/* For one long call that reports no steps (an import, one commit): a line
 * "label: N s" redrawn by a thread every 200 ms while the call runs, only
 * when stderr is a terminal. Returns a handle for cli_busy_end (NULL: no
 * line, nothing to end). */
struct cli_busy;
struct cli_busy *cli_busy_start(const char *label);
/* Stop the thread and clear the line. Accepts NULL. */
void cli_busy_end(struct cli_busy *b);

#endif /* CAIRN_CLI_PROGRESS_H */
