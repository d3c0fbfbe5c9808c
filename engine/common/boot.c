/*
 * boot.c - see boot.h.
 */
#include "boot.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <xxhash.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t real_id;
static uint64_t forced_id; /* atomic: tests only */

static void read_id(void)
{
    char buf[64];
    ssize_t n = -1;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, buf, sizeof buf);
        close(fd);
    }
    if (n >= 32) { /* a UUID in text, with its newline */
        real_id = XXH3_64bits(buf, (size_t)n);
        real_id += real_id == 0;
    }
}

uint64_t cairn__boot_id(void)
{
    uint64_t f = __atomic_load_n(&forced_id, __ATOMIC_ACQUIRE);
    if (f != 0)
        return f;
    pthread_once(&once, read_id);
    return real_id;
}

void cairn__boot_id_set(uint64_t id)
{
    __atomic_store_n(&forced_id, id, __ATOMIC_RELEASE);
}
