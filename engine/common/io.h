/*
 * io.h - the library's one I/O layer. Every file operation goes through the
 * cairn_io table of the handle (cairn_sys.h), so tests can fail any call
 * site. These wrappers add what every caller needs: full writes across short
 * writes, errno mapped to a status code, and a message naming the file.
 */
#ifndef CAIRN_IO_H
#define CAIRN_IO_H

#include <stddef.h>
#include <dirent.h>
#include <stdint.h>
#include <sys/types.h>

#include "cairn_sys.h"
#include "status.h"

/* openat(dirfd, name) -> fd in *fd. Every file of a store is opened here,
 * and never through a symlink: O_NOFOLLOW is added to flags, and a name
 * that is a symlink is CAIRN_ECORRUPT ("NAME is a symlink; refusing to
 * follow it"): a store holds only regular files, and one planted link must
 * not make the engine read or write a file outside it. O_CREAT | O_TRUNC
 * without O_EXCL means "write this file from scratch" (temp files, a
 * .damaged copy): it is created with O_EXCL instead, after unlinking
 * whatever already has the name (a stale temp, a planted symlink), so the
 * bytes always go to a new regular file. */
/* A listing of the directory dirfd from its first entry (dirfd itself is
 * not moved: the listing reads a duplicate, rewound). NULL with errno set
 * on failure. Close with closedir(). */
DIR *cairn__io_opendir(int dirfd);

int cairn__io_open(const cairn_io *io, const char *site, int dirfd, const char *name,
                   int flags, int mode, int *fd, cairn__err *e);
void cairn__io_close(const cairn_io *io, const char *site, int fd);

/* Write all of buf at off, looping over short writes. A write that makes no
 * progress is CAIRN_EIO; ENOSPC is CAIRN_EFULL. */
int cairn__io_write(const cairn_io *io, const char *site, int fd, const void *buf,
                    size_t len, uint64_t off, const char *name, cairn__err *e);

/* The same, for a file that readers map and read in place (the memory
 * index, the graph file, sealed segments): written in pieces of at most
 * CAIRN__IO_MAPPED_PIECE bytes, each within one aligned run of that many. The page cache keeps what a write() of n
 * bytes brings in as folios of up to n bytes, and a reader's page fault
 * maps the whole folio it lands in: after 1 MiB writes, each probe of a
 * hash table mapped up to 1 MiB, and a `cairn recall` on a 1M-memory
 * chain of 12 files peaked at 99 MB RSS, 36 MB with 64 KiB pieces (the
 * kernel's fault-around maps 64 KiB anyway). */
#define CAIRN__IO_MAPPED_PIECE (64u << 10)
int cairn__io_write_mapped(const cairn_io *io, const char *site, int fd, const void *buf,
                           size_t len, uint64_t off, const char *name, cairn__err *e);

/* Read up to len bytes at off; *got is what was read (short only at EOF). */
int cairn__io_read(const cairn_io *io, const char *site, int fd, void *buf, size_t len,
                   uint64_t off, size_t *got, const char *name, cairn__err *e);

int cairn__io_fsync(const cairn_io *io, const char *site, int fd, const char *name,
                    cairn__err *e);
int cairn__io_fdatasync(const cairn_io *io, const char *site, int fd, const char *name,
                        cairn__err *e);
int cairn__io_truncate(const cairn_io *io, const char *site, int fd, uint64_t len,
                       const char *name, cairn__err *e);
/* Best effort: ask io->reserve for the space of [off, off + len) without
 * changing the file size. 0: reserved; 1: nothing done (no reserve in the
 * table, len 0, EOPNOTSUPP or ENOSYS); -1: it failed and may have
 * reserved part of it. Never an error. */
int cairn__io_reserve(const cairn_io *io, const char *site, int fd, uint64_t off, uint64_t len);
/* Best effort: start writing [off, off + len) of fd back to the disk now,
 * without waiting (Linux sync_file_range). A file written in one go and
 * then fsynced has its fsync wait only for the last part, not for all of
 * it: a close that waits for a merge's fsync waits less. Not a durability
 * step (the fsync still is), so it bypasses the io table; a failure is
 * ignored. */
void cairn__io_writeback(int fd, uint64_t off, uint64_t len);
/* cairn__io_fsync for a file of len bytes written by a background job
 * that a close may stop: first waits for its pages' writeback a few MiB at
 * a time (Linux sync_file_range), looking at *stop between the pieces
 * (CAIRN_ELOCKED once it is set), so a close waits for one piece rather
 * than the sync of a whole merged file (hundreds of MB). A piece's
 * failure is the fsync's (CAIRN_EIO): the kernel reports a writeback
 * error once. stop NULL: cairn__io_fsync. */
int cairn__io_fsync_stoppable(const cairn_io *io, const char *site, int fd, uint64_t len,
                              const int *stop, const char *name, cairn__err *e);
int cairn__io_rename(const cairn_io *io, const char *site, int dirfd, const char *from,
                     const char *to, cairn__err *e);
int cairn__io_unlink(const cairn_io *io, const char *site, int dirfd, const char *name,
                     cairn__err *e);

/* The call sites of cairn__io_publish, named for fault injection. */
typedef struct cairn__publish_sites {
    const char *fsync, *close, *rename, *dirsync;
} cairn__publish_sites;

/* Put a written temp file in place as `name`, the one crash-safe way:
 * fsync it (if rc, the status so far, is CAIRN_OK), close it (always: fd
 * is consumed), rename it over name and fsync the directory (if all went
 * well). Returns the final status; a temp file left behind is the
 * caller's to remove. */
int cairn__io_publish(const cairn_io *io, const cairn__publish_sites *sites, int rc, int fd,
                      int dirfd, const char *tmp, const char *name, cairn__err *e);

/* The same for a temp file its writer has fsynced already: no second
 * fsync (on ext4 another flush of the device's cache). */
int cairn__io_publish_synced(const cairn_io *io, const cairn__publish_sites *sites, int rc,
                             int fd, int dirfd, const char *tmp, const char *name,
                             cairn__err *e);

#endif /* CAIRN_IO_H */
