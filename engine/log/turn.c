/*
 * turn.c - the writer lock, held for a turn (format-spec/lock.md).
 *
 * Many processes write one store by taking turns. A turn is one commit,
 * one group commit, a roll, a seal, a checkpoint: whatever writes a file
 * of the store. A turn holds the exclusive flock on LOCK; it starts by
 * catching up on what other processes wrote (store.c, cairn__catch_up), so
 * the sequence numbers this handle hands out and the file offsets it writes
 * at are the log's; it ends when no operation of this handle needs the lock
 * any more and the write buffer is in the file.
 *
 * A handle that finds the lock held waits up to its busy timeout, polling
 * (flock has no timed wait), then fails with CAIRN_ELOCKED naming the
 * holder's pid. Polling alone would let a writer that streams (`producer |
 * cairn log`: a new turn a few microseconds after each group commit) keep
 * the lock forever, so a waiter also says it waits, with a shared OFD lock
 * on byte 1 of LOCK, and a handle whose last turn ended a moment ago steps
 * aside while anyone says so. In-process, `mu` orders threads; one thread
 * at a time waits for the flock (turn_taking) without holding `mu`, so
 * readers of the handle never wait behind another process.
 */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "io.h"

static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
    struct timespec t = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    nanosleep(&t, NULL);
}

int cairn__lock_open(cairn_db *db, cairn__err *e)
{
    /* Through the I/O layer: never a symlink (the pid written at each turn
     * would land in whatever file it names), and never unlinked or
     * replaced (a second LOCK file would let a second writer in). */
    int rc = cairn__io_open(db->io, "lock.open", db->dirfd, LOCK_NAME, O_RDWR | O_CREAT, 0644,
                            &db->lockfd, e);
    if (rc != CAIRN_OK) {
        char why[sizeof e->msg];
        memcpy(why, e->msg, sizeof why);
        return cairn__fail(e, rc, "store %s: %s", db->path, why);
    }
    return CAIRN_OK;
}

/* Byte 1 of LOCK carries waiters' shared OFD locks; byte 0 is unused by
 * them so it never conflicts with anything else. */
static int waiting_mark(cairn_db *db, short type)
{
#ifdef F_OFD_SETLK
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = 1;
    fl.l_len = 1;
    return fcntl(db->lockfd, F_OFD_SETLK, &fl);
#else
    (void)db;
    (void)type;
    return 0;
#endif
}

static int others_waiting(cairn_db *db)
{
#ifdef F_OFD_GETLK
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = 1;
    fl.l_len = 1;
    return fcntl(db->lockfd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
#else
    (void)db;
    return 0;
#endif
}

static long holder_pid(cairn_db *db)
{
    char buf[32];
    int n = (int)pread(db->lockfd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

/* Take the flock, waiting up to the busy timeout (mu not held). */
static int lock_wait(cairn_db *db, cairn__err *e)
{
    int64_t start = mono_ns(), wait = 50000, deadline;
    int marked = 0;

    deadline = start + (int64_t)db->busy_ms * 1000000;
    /* A handle whose turn ended a moment ago and wants another lets a
     * process that waits go first (at most 20 ms). */
    if (start - db->turn_ended_ns < 100000000) {
        while (others_waiting(db) && mono_ns() - start < 20000000)
            sleep_ns(200000);
    }
    for (;;) {
        int64_t now;
        if (flock(db->lockfd, LOCK_EX | LOCK_NB) == 0)
            break;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            int err = errno;
            if (marked)
                waiting_mark(db, F_UNLCK);
            return cairn__fail(e, CAIRN_EIO, "flock %s/LOCK: %s", db->path, strerror(err));
        }
        now = mono_ns();
        if (now >= deadline) {
            if (marked)
                waiting_mark(db, F_UNLCK);
            return cairn__fail(e, CAIRN_ELOCKED,
                               "store %s is locked by another writer (pid %ld); waited %u ms",
                               db->path, holder_pid(db), db->busy_ms);
        }
        if (!marked)
            marked = waiting_mark(db, F_RDLCK) == 0;
        sleep_ns(wait < deadline - now ? wait : deadline - now);
        if (wait < 1000000)
            wait *= 2;
    }
    if (marked)
        waiting_mark(db, F_UNLCK);
    return CAIRN_OK;
}

static int say_pid(cairn_db *db, cairn__err *e)
{
    char buf[32];
    /* No ftruncate: a shorter pid over a longer one leaves digits after
     * the newline, which a reader of the first line ignores. */
    int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (pwrite(db->lockfd, buf, (size_t)n, 0) != n)
        return cairn__fail(e, cairn__errno_status(errno), "write %s/LOCK: %s", db->path,
                           strerror(errno));
    return CAIRN_OK;
}

int cairn__turn_lock(cairn_db *db, cairn__err *e)
{
    int rc = lock_wait(db, e);
    if (rc == CAIRN_OK && (rc = say_pid(db, e)) != CAIRN_OK)
        flock(db->lockfd, LOCK_UN);
    return rc;
}

int cairn__turn_get(cairn_db *db)
{
    cairn__err e;
    int rc;

    while (db->turn_taking)
        pthread_cond_wait(&db->turn_cv, &db->mu);
    if (db->turn_held) {
        db->turn_users++;
        return CAIRN_OK;
    }
    db->turn_taking = 1;
    pthread_mutex_unlock(&db->mu);
    rc = cairn__turn_lock(db, &e);
    pthread_mutex_lock(&db->mu);
    db->turn_taking = 0;
    pthread_cond_broadcast(&db->turn_cv);
    if (rc != CAIRN_OK)
        return cairn__db_fail(db, rc, &e);
    db->turn_held = 1;
    db->turn_users++;
    rc = cairn__catch_up(db, 1);
    if (rc != CAIRN_OK)
        cairn__turn_put(db);
    return rc;
}

void cairn__turn_release(cairn_db *db)
{
    /* A dead handle's buffer will never be written: nothing to wait for. */
    if (!db->turn_held || db->turn_users > 0 || (db->wbuf_len > 0 && !db->dead))
        return;
    flock(db->lockfd, LOCK_UN);
    db->turn_held = 0;
    db->turn_ended_ns = mono_ns();
}

void cairn__turn_put(cairn_db *db)
{
    if (db->turn_users > 0)
        db->turn_users--;
    cairn__turn_release(db);
}

int cairn__turn_begin(cairn_db *db)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = cairn__check_writable(db);
    if (rc == CAIRN_OK)
        rc = cairn__turn_get(db);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int cairn__turn_end(cairn_db *db)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    /* The records of the turn go to the file before anyone else may write
     * after them. */
    rc = cairn__flush_locked(db);
    cairn__turn_put(db);
    pthread_mutex_unlock(&db->mu);
    return rc;
}
