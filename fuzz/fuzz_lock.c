/*
 * fuzz_lock.c - the content of LOCK (engine/log/lockfile.c) over arbitrary
 * bytes: whatever a crash, an older writer or anyone left there.
 *
 * Invariants: no read past the input; the pid is 0 or 1..2147483647; it
 * is nonzero exactly when the bytes start with 1..10 digits (followed by
 * anything but a digit, or the end) of a value in that range, and then it
 * is that value (a reference parse); writing a pid over the bytes, as a
 * writer does, always reads back as that pid.
 */
#include "fuzz.h"

#include "lockfile.h"

static long reference(const uint8_t *d, size_t n)
{
    unsigned long long v = 0;
    size_t i = 0;
    while (i < n && d[i] >= '0' && d[i] <= '9') {
        if (i == 10)
            return 0;
        v = v * 10 + (unsigned long long)(d[i] - '0');
        i++;
    }
    return i > 0 && v >= 1 && v <= 2147483647ull ? (long)v : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1), *over;
    long pid, back;
    size_t n, len;

    if (copy == NULL)
        return 0;
    memcpy(copy, data, size); /* exactly size bytes: a read past them traps under ASan */
    pid = cairn__lock_pid_parse((const char *)copy, size);
    FUZZ_CHECK(pid >= 0 && pid <= 2147483647L);
    FUZZ_CHECK(pid == reference(data, size));
    /* A writer's pid over these bytes: the pid is taken from the input. */
    len = size > LOCK_PID_MAX_LEN ? size : LOCK_PID_MAX_LEN;
    over = malloc(len);
    if (over != NULL) {
        long mine = (long)(size > 0 ? (data[0] * 16777259ul) % 2147483647ul + 1 : 1);
        memset(over, 'x', len);
        memcpy(over, data, size);
        n = cairn__lock_pid_encode((char *)over, mine);
        FUZZ_CHECK(n >= 2 && n <= LOCK_PID_MAX_LEN && over[n - 1] == '\n');
        back = cairn__lock_pid_parse((const char *)over, len);
        FUZZ_CHECK(back == mine);
        free(over);
    }
    free(copy);
    return 0;
}
