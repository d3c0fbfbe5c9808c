/*
 * cairn_sys.h - the I/O table: every system call libcairn makes on a file
 * goes through one of these pointers, so tests (and unusual hosts) can inject
 * short writes, EIO, ENOSPC, failed fsyncs, renames and opens at any call
 * site. Pass a table in cairn_options.io; NULL means the real calls.
 *
 * Each function follows its POSIX namesake: it returns -1 and sets errno on
 * failure. `site` names the call site ("segment.append", "manifest.rename",
 * ...) so an injector can target one place; the real table ignores it.
 * A handle with background threads calls the table from them too; one
 * without (cairn_options.background 0) given a table makes every call from
 * the thread that called the API, in an order that repeats run after run
 * (with the real calls it may hash a segment on a thread of its own while
 * it seals it).
 */
#ifndef CAIRN_SYS_H
#define CAIRN_SYS_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cairn_io {
    int (*open)(void *user, const char *site, const char *path, int flags, int mode);
    int (*openat)(void *user, const char *site, int dirfd, const char *path, int flags,
                  int mode);
    int (*close)(void *user, const char *site, int fd);
    ssize_t (*pread)(void *user, const char *site, int fd, void *buf, size_t len, off_t off);
    ssize_t (*pwrite)(void *user, const char *site, int fd, const void *buf, size_t len,
                      off_t off);
    int (*fsync)(void *user, const char *site, int fd);
    int (*fdatasync)(void *user, const char *site, int fd);
    int (*ftruncate)(void *user, const char *site, int fd, off_t len);
    int (*renameat)(void *user, const char *site, int dirfd, const char *from,
                    const char *to);
    int (*unlinkat)(void *user, const char *site, int dirfd, const char *path);
    void *user;
    /* Optional, NULL = never called (since CAIRN_OPTIONS_VERSION 2; set it
     * in a table filled member by member): reserve disk space for bytes
     * [off, off + len) without changing the file size. The writer reserves
     * the active segment's space up to segment_size, which keeps the file
     * in few extents and spares each commit a block allocation. The
     * default table: fallocate(FALLOC_FL_KEEP_SIZE) on Linux, unless less
     * than four times len is free; on tmpfs and ramfs (where it would only
     * pin memory) and elsewhere it fails with EOPNOTSUPP. A failure is never
     * an error: the appends allocate as they go, and the file is truncated
     * to its size at once, which frees whatever a failed call did allocate
     * (except after EOPNOTSUPP or ENOSYS: nothing was). */
    int (*reserve)(void *user, const char *site, int fd, off_t off, off_t len);
} cairn_io;

/* The real system calls (what NULL in cairn_options.io means). */
const cairn_io *cairn_io_default(void);

#ifdef __cplusplus
}
#endif
#endif /* CAIRN_SYS_H */
