/*
 * follow.c - cairn_follow_*: the records of a range as they are committed,
 * in this process or another, waiting for new ones without polling.
 *
 * A follower reads with ordinary iterators, each opened "as of now" from
 * the seq after the last record it handed out; at the end of one it waits
 * for the store's directory to change (an inotify watch made before the
 * first read, so a commit between the end of a read and the wait is never
 * missed), then opens the next. A commit reaches the directory as a write
 * to the active segment (when the writer flushes its buffer: at once in
 * `full` mode, within batch_ms in the others), a new segment or a new
 * MANIFEST; a roll or a seal moves records between files but never
 * changes their seqs, so none is handed out twice or skipped.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/inotify.h>
#endif

#include "cairn.h"
#include "status.h"
#include "store.h"

/* Where inotify is missing: how long a wait sleeps between looks. */
#define FOLLOW_SLEEP_MS 50

struct cairn_follow {
    cairn_db *db;
    cairn_range range;
    uint64_t next_seq;   /* the first seq not handed out yet */
    cairn_iter *it;      /* open while its last record is lent out */
    int ifd;             /* the directory's inotify watch; -1: none */
};

int cairn_follow_open(cairn_db *db, const cairn_range *range, cairn_follow **out)
{
    cairn_range all = CAIRN_RANGE_INIT;
    cairn_follow *f;

    if (out == NULL)
        return CAIRN_EINVAL;
    *out = NULL;
    if (db == NULL)
        return CAIRN_EINVAL;
    if (range == NULL)
        range = &all;
    if (range->version < 1 || range->version > CAIRN_RANGE_VERSION)
        return cairn__db_failf(db, CAIRN_EINVAL,
                               "cairn_range: version %u; this library knows 1..%u",
                               range->version, (unsigned)CAIRN_RANGE_VERSION);
    if ((f = calloc(1, sizeof *f)) == NULL)
        return cairn__db_failf(db, CAIRN_ENOMEM, "no memory to follow the log");
    f->db = db;
    f->range = *range;
    f->next_seq = range->seq_from > 0 ? range->seq_from : 1;
    f->ifd = -1;
#ifdef __linux__
    if ((f->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) >= 0 &&
        inotify_add_watch(f->ifd, db->path,
                          IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO) < 0) {
        close(f->ifd);
        f->ifd = -1;
    }
#endif
    *out = f;
    return CAIRN_OK;
}

int cairn_follow_fd(const cairn_follow *f)
{
    return f != NULL ? f->ifd : -1;
}

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Wait up to ms (< 0: no limit) for a change of the directory; forget the
 * changes seen. 0 when one came (or may have), -1 when the time ran out
 * or a signal came. */
static int wait_change(cairn_follow *f, int ms)
{
    char buf[4096];
    int r;
    if (f->ifd < 0) {
        struct timespec t = {0, FOLLOW_SLEEP_MS * 1000000L};
        if (ms == 0)
            return -1;
        if (ms > 0 && ms < FOLLOW_SLEEP_MS)
            t.tv_nsec = ms * 1000000L;
        return nanosleep(&t, NULL) == 0 ? 0 : -1;
    }
    {
        struct pollfd p = {f->ifd, POLLIN, 0};
        r = poll(&p, 1, ms);
    }
    if (r <= 0)
        return -1; /* the time ran out, or a signal (the caller decides) */
    while (read(f->ifd, buf, sizeof buf) > 0)
        ; /* non-blocking: the events so far */
    return 0;
}

int cairn_follow_next(cairn_follow *f, cairn_record *rec, int timeout_ms)
{
    long long until = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
    int rc;

    if (f == NULL || rec == NULL)
        return CAIRN_EINVAL;
    for (;;) {
        if (f->next_seq > f->range.seq_to)
            return CAIRN_ENOTFOUND; /* past the range: nothing more, ever */
        if (f->it == NULL) {
            cairn_range r = f->range;
            r.seq_from = f->next_seq;
            if ((rc = cairn_iter_open(f->db, &r, &f->it)) != CAIRN_OK)
                return rc;
        }
        rc = cairn_iter_next(f->it, rec);
        if (rc == CAIRN_OK) {
            f->next_seq = rec->seq + 1;
            return CAIRN_OK; /* lent until the next call: the iterator stays open */
        }
        cairn_iter_close(f->it);
        f->it = NULL;
        if (rc != CAIRN_ENOTFOUND)
            return rc;
        /* at the end as of now: wait for a commit */
        if (timeout_ms == 0)
            return CAIRN_ENOTFOUND;
        {
            int left = -1;
            if (timeout_ms > 0) {
                long long l = until - now_ms();
                if (l <= 0)
                    return CAIRN_ENOTFOUND;
                left = (int)l;
            }
            if (wait_change(f, left) != 0)
                return CAIRN_ENOTFOUND;
        }
    }
}

void cairn_follow_close(cairn_follow *f)
{
    if (f == NULL)
        return;
    cairn_iter_close(f->it);
    if (f->ifd >= 0)
        close(f->ifd);
    free(f);
}
