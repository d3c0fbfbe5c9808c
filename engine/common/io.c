/*
 * io.c - the default I/O table (the real system calls) and the wrappers
 * every module uses. The wrappers never retry a failed fsync: after an
 * fsync error the kernel may have dropped the dirty pages, so a retry that
 * succeeds would pretend the data is safe. Callers treat it as fatal.
 */
#ifdef __linux__
#define _GNU_SOURCE /* fallocate */
#endif
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/magic.h>
#include <sys/vfs.h>
#endif

static int sys_open(void *u, const char *s, const char *p, int fl, int mode)
{
    (void)u, (void)s;
    return open(p, fl | O_CLOEXEC, mode);
}

static int sys_openat(void *u, const char *s, int dirfd, const char *p, int fl, int mode)
{
    (void)u, (void)s;
    return openat(dirfd, p, fl | O_CLOEXEC, mode);
}

static int sys_close(void *u, const char *s, int fd)
{
    (void)u, (void)s;
    return close(fd);
}

static ssize_t sys_pread(void *u, const char *s, int fd, void *b, size_t n, off_t off)
{
    (void)u, (void)s;
    return pread(fd, b, n, off);
}

static ssize_t sys_pwrite(void *u, const char *s, int fd, const void *b, size_t n, off_t off)
{
    (void)u, (void)s;
    return pwrite(fd, b, n, off);
}

static int sys_fsync(void *u, const char *s, int fd)
{
    (void)u, (void)s;
    return fsync(fd);
}

static int sys_fdatasync(void *u, const char *s, int fd)
{
    (void)u, (void)s;
    return fdatasync(fd);
}

static int sys_ftruncate(void *u, const char *s, int fd, off_t len)
{
    (void)u, (void)s;
    return ftruncate(fd, len);
}

static int sys_renameat(void *u, const char *s, int dirfd, const char *a, const char *b)
{
    (void)u, (void)s;
    return renameat(dirfd, a, dirfd, b);
}

static int sys_unlinkat(void *u, const char *s, int dirfd, const char *p)
{
    (void)u, (void)s;
    return unlinkat(dirfd, p, 0);
}

static int sys_reserve(void *u, const char *s, int fd, off_t off, off_t len)
{
    (void)u, (void)s;
#ifdef __linux__
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0)
        return -1;
    /* On a memory file system a reservation allocates memory and saves no
     * block allocation later. */
    if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC) {
        errno = EOPNOTSUPP;
        return -1;
    }
    /* Never take the space a seal or an index file is about to need. */
    if ((uint64_t)fs.f_bavail * (uint64_t)(fs.f_frsize ? fs.f_frsize : fs.f_bsize) / 4 <
        (uint64_t)len) {
        errno = ENOSPC;
        return -1;
    }
    return fallocate(fd, FALLOC_FL_KEEP_SIZE, off, len);
#else
    (void)fd, (void)off, (void)len;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

static const cairn_io default_io = {
    sys_open,      sys_openat,    sys_close,    sys_pread,    sys_pwrite, sys_fsync,
    sys_fdatasync, sys_ftruncate, sys_renameat, sys_unlinkat, NULL,       sys_reserve,
};

const cairn_io *cairn_io_default(void)
{
    return &default_io;
}

static int io_fail(cairn__err *e, int errnum, const char *what, const char *name)
{
    if (errnum == ENOSPC) /* say it plainly: this is the one an operator can fix */
        return cairn__fail(e, CAIRN_EFULL, "%s %s: the disk is full (%s)", what,
                           name ? name : "?", strerror(errnum));
    return cairn__fail(e, cairn__errno_status(errnum), "%s %s: %s", what, name ? name : "?",
                       strerror(errnum));
}

DIR *cairn__io_opendir(int dirfd)
{
    int fd = dup(dirfd), err;
    DIR *d;

    if (fd < 0)
        return NULL;
    if ((d = fdopendir(fd)) == NULL) {
        err = errno;
        close(fd);
        errno = err;
        return NULL;
    }
    rewinddir(d); /* the dup shares its offset with dirfd: start at the top */
    return d;
}

int cairn__io_open(const cairn_io *io, const char *site, int dirfd, const char *name,
                   int flags, int mode, int *fd, cairn__err *e)
{
    int fresh = (flags & O_CREAT) && (flags & O_TRUNC) && !(flags & O_EXCL);
    int r;

    if (fresh)
        flags = (flags & ~O_TRUNC) | O_EXCL;
    flags |= O_NOFOLLOW;
    r = io->openat(io->user, site, dirfd, name, flags, mode);
    if (r < 0 && fresh && errno == EEXIST) {
        /* A file written from scratch is ours to replace: a temp file a
         * crash left, or whatever was planted under its name. unlinkat
         * removes a symlink itself, never its target; O_EXCL then makes
         * sure the bytes go to a new regular file of our own. */
        if (io->unlinkat(io->user, site, dirfd, name) != 0 && errno != ENOENT)
            return io_fail(e, errno, "unlink", name);
        r = io->openat(io->user, site, dirfd, name, flags, mode);
    }
    if (r < 0 && errno == ELOOP) /* O_NOFOLLOW met a symlink */
        return cairn__fail(e, CAIRN_ECORRUPT, "%s is a symlink; refusing to follow it", name);
    if (r < 0)
        return io_fail(e, errno, "open", name);
    *fd = r;
    return CAIRN_OK;
}

void cairn__io_close(const cairn_io *io, const char *site, int fd)
{
    if (fd >= 0)
        io->close(io->user, site, fd);
}

int cairn__io_write(const cairn_io *io, const char *site, int fd, const void *buf,
                    size_t len, uint64_t off, const char *name, cairn__err *e)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = io->pwrite(io->user, site, fd, p, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return io_fail(e, errno, "write", name);
        }
        if (n == 0)
            return cairn__fail(e, CAIRN_EIO, "write %s: no progress at offset %llu", name,
                               (unsigned long long)off);
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return CAIRN_OK;
}

int cairn__io_write_mapped(const cairn_io *io, const char *site, int fd, const void *buf,
                           size_t len, uint64_t off, const char *name, cairn__err *e)
{
    const uint8_t *p = buf;
    while (len > 0) {
        /* up to the next multiple of the piece: a folio is aligned to its
         * size, so an unaligned piece would come in as several smaller ones */
        size_t n = CAIRN__IO_MAPPED_PIECE - (size_t)(off % CAIRN__IO_MAPPED_PIECE);
        int rc;
        if (n > len)
            n = len;
        rc = cairn__io_write(io, site, fd, p, n, off, name, e);
        if (rc != CAIRN_OK)
            return rc;
        p += n;
        len -= n;
        off += n;
    }
    return CAIRN_OK;
}

int cairn__io_read(const cairn_io *io, const char *site, int fd, void *buf, size_t len,
                   uint64_t off, size_t *got, const char *name, cairn__err *e)
{
    uint8_t *p = buf;
    size_t done = 0;
    while (done < len) {
        ssize_t n = io->pread(io->user, site, fd, p + done, len - done, (off_t)(off + done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return io_fail(e, errno, "read", name);
        }
        if (n == 0)
            break;
        done += (size_t)n;
    }
    *got = done;
    return CAIRN_OK;
}

int cairn__io_fsync(const cairn_io *io, const char *site, int fd, const char *name,
                    cairn__err *e)
{
    if (io->fsync(io->user, site, fd) != 0)
        return io_fail(e, errno, "fsync", name);
    return CAIRN_OK;
}

int cairn__io_fdatasync(const cairn_io *io, const char *site, int fd, const char *name,
                        cairn__err *e)
{
    if (io->fdatasync(io->user, site, fd) != 0)
        return io_fail(e, errno, "fdatasync", name);
    return CAIRN_OK;
}

int cairn__io_truncate(const cairn_io *io, const char *site, int fd, uint64_t len,
                       const char *name, cairn__err *e)
{
    if (io->ftruncate(io->user, site, fd, (off_t)len) != 0)
        return io_fail(e, errno, "truncate", name);
    return CAIRN_OK;
}

int cairn__io_reserve(const cairn_io *io, const char *site, int fd, uint64_t off, uint64_t len)
{
    if (io->reserve == NULL || len == 0)
        return 1;
    errno = 0; /* a table's reserve may fail without setting it */
    if (io->reserve(io->user, site, fd, (off_t)off, (off_t)len) == 0)
        return 0;
    return errno == EOPNOTSUPP || errno == ENOSYS ? 1 : -1;
}

void cairn__io_writeback(int fd, uint64_t off, uint64_t len)
{
#ifdef SYNC_FILE_RANGE_WRITE
    (void)sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd;
    (void)off;
    (void)len;
#endif
}

/* Bytes waited for between two looks at the stop: ~10-20 ms of this disk. */
#define SYNC_PIECE (4u << 20)

int cairn__io_fsync_stoppable(const cairn_io *io, const char *site, int fd, uint64_t len,
                              const int *stop, const char *name, cairn__err *e)
{
    if (stop == NULL)
        return cairn__io_fsync(io, site, fd, name, e);
#ifdef SYNC_FILE_RANGE_WRITE
    for (uint64_t off = 0; off < len; off += SYNC_PIECE) {
        uint64_t n = len - off < SYNC_PIECE ? len - off : SYNC_PIECE;
        if (__atomic_load_n(stop, __ATOMIC_ACQUIRE))
            return cairn__fail(e, CAIRN_ELOCKED, "%s: the sync was given up", name);
        if (sync_file_range(fd, (off_t)off, (off_t)n,
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                SYNC_FILE_RANGE_WAIT_AFTER) != 0 &&
            errno != ENOSYS && errno != EINVAL && errno != ESPIPE)
            return io_fail(e, errno, "fsync", name);
    }
#else
    (void)len;
#endif
    if (__atomic_load_n(stop, __ATOMIC_ACQUIRE))
        return cairn__fail(e, CAIRN_ELOCKED, "%s: the sync was given up", name);
    return cairn__io_fsync(io, site, fd, name, e);
}

int cairn__io_rename(const cairn_io *io, const char *site, int dirfd, const char *from,
                     const char *to, cairn__err *e)
{
    if (io->renameat(io->user, site, dirfd, from, to) != 0)
        return io_fail(e, errno, "rename", from);
    return CAIRN_OK;
}

int cairn__io_unlink(const cairn_io *io, const char *site, int dirfd, const char *name,
                     cairn__err *e)
{
    if (io->unlinkat(io->user, site, dirfd, name) != 0 && errno != ENOENT)
        return io_fail(e, errno, "unlink", name);
    return CAIRN_OK;
}

static int publish(const cairn_io *io, const cairn__publish_sites *sites, int rc, int fd,
                   int dirfd, const char *tmp, const char *name, int synced, cairn__err *e)
{
    if (rc == CAIRN_OK && !synced)
        rc = cairn__io_fsync(io, sites->fsync, fd, tmp, e);
    cairn__io_close(io, sites->close, fd);
    if (rc == CAIRN_OK)
        rc = cairn__io_rename(io, sites->rename, dirfd, tmp, name, e);
    if (rc == CAIRN_OK)
        rc = cairn__io_fsync(io, sites->dirsync, dirfd, ".", e);
    return rc;
}

int cairn__io_publish(const cairn_io *io, const cairn__publish_sites *sites, int rc, int fd,
                      int dirfd, const char *tmp, const char *name, cairn__err *e)
{
    return publish(io, sites, rc, fd, dirfd, tmp, name, 0, e);
}

int cairn__io_publish_synced(const cairn_io *io, const cairn__publish_sites *sites, int rc,
                             int fd, int dirfd, const char *tmp, const char *name,
                             cairn__err *e)
{
    return publish(io, sites, rc, fd, dirfd, tmp, name, 1, e);
}
