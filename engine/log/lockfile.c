/*
 * lockfile.c - the pid in LOCK (lockfile.h; format-spec/lock.md).
 */
#include "lockfile.h"

#include <stdint.h>

size_t cairn__lock_pid_encode(char *buf, long pid)
{
    char tmp[LOCK_PID_MAX_LEN];
    size_t n = 0, k = 0;
    unsigned long v = pid >= 1 && pid <= 2147483647L ? (unsigned long)pid : 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0)
        buf[k++] = tmp[--n];
    buf[k++] = '\n';
    return k;
}

long cairn__lock_pid_parse(const char *buf, size_t n)
{
    uint64_t v = 0;
    size_t i;

    for (i = 0; i < n && i < 11 && buf[i] >= '0' && buf[i] <= '9'; i++)
        v = v * 10 + (uint64_t)(buf[i] - '0');
    if (i == 0 || i > 10 || v == 0 || v > 2147483647u)
        return 0;
    return (long)v;
}
