/*
 * cli_proc.h - run an external program (the tool's --embed-cmd and
 * --llm-cmd) as `/bin/sh -c CMD`: bytes on its stdin, its stdout back,
 * its stderr passed through, within a time limit.
 */
#ifndef CAIRN_CLI_PROC_H
#define CAIRN_CLI_PROC_H

#include <stddef.h>

/* Run cmd with in[0..in_len) on its stdin (then end of input); its stdout
 * into *out (malloc'd, *out_len bytes, NUL-terminated): what it wrote
 * before it exited. It runs in a process group of its own. Returns 0, or 1
 * with a one-line reason in err (CAIRN_ERRMSG_MAX bytes): it could not
 * start, did not exit within timeout_ms, answered more than 256 MiB, or
 * did not exit 0. On a failure, and when it exited leaving a process that
 * holds its output open, its whole process group is killed (SIGKILL), so
 * nothing it started outlives the call holding the tool's pipes. */
int cli_proc_run(const char *cmd, const char *in, size_t in_len, int timeout_ms, char **out,
                 size_t *out_len, char *err);

#endif /* CAIRN_CLI_PROC_H */
