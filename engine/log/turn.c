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
 * A handle that finds the lock held waits up to its busy timeout, then
 * fails with CAIRN_ELOCKED naming the holder's pid. flock has no timed
 * wait, so a waiter sleeps in poll(2) on an inotify watch of LOCK: a
 * holder that lets go while anyone waits writes its pid again (IN_MODIFY),
 * and one that dies closes its descriptor (IN_CLOSE_WRITE), so the waiter
 * wakes at once (10 ms sleeps where inotify is missing). A waiter says it
 * waits with a shared OFD lock on byte 1 of LOCK; a handle lets the lock go
 * once it has held it for a quantum (2 ms) while anyone says so, and one
 * whose last turn ended a moment ago steps aside for it, so a writer that
 * streams (`producer | cairn log`) cannot keep the others out.
 *
 * With the background thread, a turn that ends while nobody waits keeps
 * the flock (it lingers): the next turn of the handle starts without a
 * system call and without catching up (nobody else can have written), and
 * the flusher lets it go after 1 ms without a turn. A store loop costs one
 * write per commit, not a lock, a catch-up and an unlock.
 *
 * In-process, `mu` orders threads; one thread at a time waits for the
 * flock (turn_taking) without holding `mu`, so readers of the handle never
 * wait behind another process.
 */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#ifdef __linux__
#include <sys/inotify.h>
#endif
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "lockfile.h"

/* How long a handle whose turns follow each other keeps the lock while
 * another process waits: its commits of that time share one hand-over
 * (the next holder catches up on them in one read), so many processes
 * storing one memory at a time still commit in bursts. Each waiter gets
 * the lock within (waiters x quantum), far below a busy timeout. */
#define TURN_QUANTUM_NS 2000000

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

/* An OFD lock of type (F_RDLCK, F_WRLCK, F_UNLCK) on one byte of LOCK:
 * 0, or -1 with errno (ENOSYS without OFD locks). Byte 1 carries waiters'
 * shared locks, byte 2 the compaction lock (a compaction's F_WRLCK, a
 * writer's open's F_RDLCK while it lists orphans), byte 3 the index
 * writer's (cairn__index_writer_lock); byte 0 is unused by
 * them so it never conflicts with anything else. */
static int ofd_byte_lock(cairn_db *db, off_t byte, short type)
{
#ifdef F_OFD_SETLK
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = byte;
    fl.l_len = 1;
    return fcntl(db->lockfd, F_OFD_SETLK, &fl);
#else
    (void)db;
    (void)byte;
    (void)type;
    errno = ENOSYS;
    return -1;
#endif
}

/* A waiter's mark on byte 1 (without OFD locks: none, and no error). */
static int waiting_mark(cairn_db *db, short type)
{
    return ofd_byte_lock(db, 1, type) == 0 || errno == ENOSYS ? 0 : -1;
}

static int byte2_lock(cairn_db *db, short type)
{
    return ofd_byte_lock(db, 2, type);
}

int cairn__compact_lock(cairn_db *db, int take)
{
    /* Byte 2 of LOCK: one compaction at a time, held apart from turns (a
     * compaction takes a turn only to swap its files in). An OFD lock
     * does not keep this handle's own threads apart: the flag does. */
    int rc = CAIRN_OK;
    if (db->lockfd < 0)
        return cairn__db_failf(db, CAIRN_EPERM, "a read-only handle cannot compact");
    pthread_mutex_lock(&db->mu);
    if (!take) {
        if (db->compacting)
            (void)byte2_lock(db, F_UNLCK);
        db->compacting = 0;
    } else if (db->compacting) {
        rc = CAIRN_ELOCKED;
    } else if (byte2_lock(db, F_WRLCK) == 0) {
        db->compacting = 1;
    } else {
        rc = errno == EAGAIN || errno == EACCES ? CAIRN_ELOCKED
             : errno == ENOSYS                 ? CAIRN_EUNAVAIL
                                               : cairn__errno_status(errno);
    }
    pthread_mutex_unlock(&db->mu);
    if (rc == CAIRN_ELOCKED)
        return cairn__db_failf(db, rc, "another compaction or purge of this store is running; "
                               "try again when it is done");
    if (rc != CAIRN_OK)
        return cairn__db_failf(db, rc, "LOCK: compaction lock: %s", strerror(errno));
    return CAIRN_OK;
}

int cairn__compaction_guard(cairn_db *db, int take)
{
    if (!take)
        return byte2_lock(db, F_UNLCK) == 0;
    return byte2_lock(db, F_RDLCK) == 0;
}

int cairn__compaction_live(cairn_db *db)
{
#ifdef F_OFD_GETLK
    struct flock fl;
    int fd = db->lockfd, live;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = 2;
    fl.l_len = 1;
    /* A read-only handle has no LOCK open: a look of its own. */
    if (fd < 0 && cairn__io_open(db->io, "lock.probe", db->dirfd, LOCK_NAME, O_RDONLY, 0, &fd,
                                 NULL) != CAIRN_OK)
        return 0;
    live = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    if (fd != db->lockfd)
        cairn__io_close(db->io, "lock.probe", fd);
    return live;
#else
    (void)db;
    return 0;
#endif
}

int cairn__index_writer_lock(cairn_db *db, int take)
{
    /* Byte 3 of LOCK: the one closing handle of the store that folds and
     * writes the memory index at a time. Held outside turns; waited for
     * in 1 ms sleeps, at most the busy timeout. */
    int64_t deadline;
    if (db->lockfd < 0)
        return 0;
    if (!take)
        return ofd_byte_lock(db, 3, F_UNLCK) == 0;
    deadline = mono_ns() + (int64_t)db->busy_ms * 1000000;
    for (;;) {
        if (ofd_byte_lock(db, 3, F_WRLCK) == 0)
            return 1;
        if ((errno != EAGAIN && errno != EACCES) || mono_ns() >= deadline)
            return 0;
        sleep_ns(1000000);
    }
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
    ssize_t n = pread(db->lockfd, buf, sizeof buf, 0);
    return n > 0 ? cairn__lock_pid_parse(buf, (size_t)n) : 0;
}

/* Watch LOCK for writes and writable closes (once per handle; -1 when
 * inotify is missing or out of instances: then waits are sleeps). */
static void watch_lock(cairn_db *db)
{
#ifdef __linux__
    char name[4096];
    int fd;
    if (db->inofd != -2)
        return;
    db->inofd = -1;
    if (snprintf(name, sizeof name, "%s/%s", db->path, LOCK_NAME) >= (int)sizeof name)
        return;
    fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0)
        return;
    if (inotify_add_watch(fd, name, IN_MODIFY | IN_CLOSE_WRITE | IN_DONT_FOLLOW) < 0) {
        close(fd);
        return;
    }
    db->inofd = fd;
#else
    db->inofd = -1;
#endif
}

/* Forget the events so far: the next wait sleeps until a new one. */
static void drain_events(cairn_db *db)
{
    char buf[1024];
    if (db->inofd >= 0)
        while (read(db->inofd, buf, sizeof buf) > 0)
            ;
}

/* Sleep until LOCK is written or closed by a writer, or ns pass. */
static void wait_event(cairn_db *db, int64_t ns)
{
    if (db->inofd >= 0) {
        struct pollfd p = {db->inofd, POLLIN, 0};
        int ms = (int)((ns + 999999) / 1000000);
        (void)poll(&p, 1, ms > 0 ? ms : 1);
    } else {
        sleep_ns(ns);
    }
}

/* Take the flock, waiting up to the busy timeout (mu not held; `ended`:
 * when this handle's last turn ended, read under mu). */
static int lock_wait(cairn_db *db, int64_t ended, cairn__err *e)
{
    int64_t start = mono_ns(), deadline;
    int marked = 0;

    deadline = start + (int64_t)db->busy_ms * 1000000;
    /* A handle whose turn ended a moment ago and wants another lets a
     * process that waits go first: until that one writes its pid (it got
     * the lock), at most 20 ms. */
    if (start - ended < 100000000 && others_waiting(db)) {
        watch_lock(db);
        drain_events(db);
        if (others_waiting(db))
            wait_event(db, 20000000);
    }
    for (;;) {
        int64_t now;
        drain_events(db);
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
        if (!marked) {
            /* Say so, watch, and try once more before sleeping: a release
             * in between would otherwise wake nobody. */
            marked = waiting_mark(db, F_RDLCK) == 0;
            watch_lock(db);
            continue;
        }
        /* Useful work first (the engine's fold of what the holder wrote),
         * then look again. */
        if (db->busy_fn != NULL && db->busy_fn(db->busy_user))
            continue;
        /* 10 ms at most: a holder on a file system without inotify, or a
         * release that raced the watch, costs no more than that. */
        wait_event(db, deadline - now < 10000000 ? deadline - now : 10000000);
    }
    if (marked)
        waiting_mark(db, F_UNLCK);
    return CAIRN_OK;
}

/* Write this process's pid at the start of LOCK. A turn taken again by
 * the process whose pid is there already skips the write (a read costs
 * far less: a write also updates the file's times, an inode change in
 * the journal); `wake` writes anyway, for the inotify watch of a waiter. */
static int say_pid(cairn_db *db, int wake, cairn__err *e)
{
    char buf[LOCK_PID_MAX_LEN], cur[LOCK_PID_MAX_LEN];
    /* No ftruncate: a shorter pid over a longer one leaves digits after
     * the newline, which a reader of the first line ignores. */
    size_t n = cairn__lock_pid_encode(buf, (long)getpid());
    if (!wake && pread(db->lockfd, cur, n, 0) == (ssize_t)n && memcmp(cur, buf, n) == 0)
        return CAIRN_OK;
    if (pwrite(db->lockfd, buf, n, 0) != (ssize_t)n)
        return cairn__fail(e, cairn__errno_status(errno), "write %s/LOCK: %s", db->path,
                           strerror(errno));
    return CAIRN_OK;
}

static int turn_lock(cairn_db *db, int64_t ended, cairn__err *e)
{
    int rc = lock_wait(db, ended, e);
    if (rc == CAIRN_OK && (rc = say_pid(db, 0, e)) != CAIRN_OK)
        flock(db->lockfd, LOCK_UN);
    return rc;
}

int cairn__turn_lock(cairn_db *db, cairn__err *e)
{
    return turn_lock(db, 0, e); /* at open: no turn ended yet */
}

void cairn__turn_let_go(cairn_db *db)
{
    flock(db->lockfd, LOCK_UN);
    db->turn_held = 0;
    db->lingering = 0;
    db->turn_ended_ns = mono_ns();
    /* Wake whoever waits (their inotify watch sees the write). */
    if (others_waiting(db))
        (void)say_pid(db, 1, NULL);
}

int cairn__turn_get(cairn_db *db)
{
    cairn__err e;
    int64_t ended;
    int rc;

    while (db->turn_taking)
        pthread_cond_wait(&db->turn_cv, &db->mu);
    if (db->turn_held) {
        db->turn_users++;
        return CAIRN_OK;
    }
    db->turn_taking = 1;
    ended = db->turn_ended_ns;
    pthread_mutex_unlock(&db->mu);
    rc = turn_lock(db, ended, &e);
    pthread_mutex_lock(&db->mu);
    db->turn_taking = 0;
    pthread_cond_broadcast(&db->turn_cv);
    if (rc != CAIRN_OK)
        return cairn__db_fail(db, rc, &e);
    db->turn_held = 1;
    db->turn_got_ns = mono_ns();
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
    if (db->bg_running && !db->bg_stop && !db->dead) {
        /* Linger: the flusher, which looks every millisecond, lets it go
         * after 1 ms without a turn, or once the quantum is over while
         * another process waits. No system call here: a commit in a loop
         * costs its write only. */
        db->turn_ended_ns = mono_ns();
        if (!db->lingering) {
            db->lingering = 1;
            pthread_cond_signal(&db->bg_cv);
        }
        return;
    }
    cairn__turn_let_go(db);
}

int cairn__turn_linger_due(cairn_db *db)
{
    int64_t now;
    if (!db->lingering || !db->turn_held || db->turn_users > 0 || (db->wbuf_len > 0 && !db->dead))
        return 0;
    if (db->dead)
        return 1;
    now = mono_ns();
    return now - db->turn_ended_ns >= 1000000 ||
           (now - db->turn_got_ns >= TURN_QUANTUM_NS && others_waiting(db));
}

void cairn__turn_put(cairn_db *db)
{
    if (db->turn_users > 0)
        db->turn_users--;
    cairn__turn_release(db);
}

int cairn__turn_begin(cairn_db *db)
{
    return cairn__turn_begin_busy(db, NULL, NULL);
}

int cairn__turn_begin_busy(cairn_db *db, cairn__turn_busy_fn busy, void *user)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = cairn__check_writable(db);
    while (rc == CAIRN_OK && db->turn_taking) /* another thread's busy work is its own */
        pthread_cond_wait(&db->turn_cv, &db->mu);
    if (rc == CAIRN_OK) {
        db->busy_fn = busy;
        db->busy_user = user;
        rc = cairn__turn_get(db);
        db->busy_fn = NULL;
        db->busy_user = NULL;
    }
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
