/*
 * lockfile.h - the content of LOCK (format-spec/lock.md, "Content"): the
 * pid of the writer that last took the lock, in decimal ASCII and a
 * newline, written over what was there without truncating it. The content
 * is only a hint for error messages; these never fail.
 */
#ifndef CAIRN_LOCKFILE_H
#define CAIRN_LOCKFILE_H

#include <stddef.h>

/* The longest content a writer writes: 10 digits and a newline. */
#define LOCK_PID_MAX_LEN 11

/* "<pid>\n" into buf (at least LOCK_PID_MAX_LEN bytes); returns its
 * length. pid is 1..2147483647 (anything else writes "0\n"). */
size_t cairn__lock_pid_encode(char *buf, long pid);

/* The pid at the start of the n bytes of buf: 1 to 10 decimal digits
 * followed by a newline, the end of the bytes, or anything that is not a
 * digit, with a value of 1..2147483647. Anything else (no digit first, more
 * than 10 digits, 0, a larger value) reads as 0: no pid known. */
long cairn__lock_pid_parse(const char *buf, size_t n);

#endif /* CAIRN_LOCKFILE_H */
