/*
 * follow.c - cairn_follow_*: the records of a range as they are committed,
 * in this process or another, waiting for new ones without polling.
 *
 * A follower reads with ordinary iterators, each opened "as of now" from
 * the first seq it has not looked at; once one ends, every seq up to the
 * iterator's limit has been looked at (handed out, or left out by the
 * range's type or time), so the next starts after it and the cost of a
 * wake follows what is new. A compaction hole stands for every seq up to
 * its `upto`: handed out once when it stands for a seq not looked at yet
 * (it may begin before: a follower that had read part of what it stands
 * for), then passed. At the end it waits for the
 * store's directory to change (an inotify watch made before the first
 * read, its events drained before each look, so a commit between the end
 * of a look and the wait is never missed). A commit reaches the directory
 * as a write to the active segment (when the writer flushes its buffer: at
 * once in `full` mode, within batch_ms in the others), a new segment or a
 * new MANIFEST; a roll or a seal moves records between files but never
 * changes their seqs. A directory moved away or removed ends the follower
 * with an error rather than a silent wait.
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
#include "hole.h"
#include "status.h"
#include "store.h"

/* Where inotify is missing: how long a wait sleeps between looks. */
#define FOLLOW_SLEEP_MS 50

struct cairn_follow {
    cairn_db *db;
    cairn_range range;
    uint64_t next_seq;   /* the first seq not looked at yet */
    cairn_iter *it;      /* open while its last record is lent out */
    int ifd;             /* the directory's inotify watch; -1: none */
    int gone;            /* the directory was moved away or removed */
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
                          IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO |
                              IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
        close(f->ifd);
        f->ifd = -1;
    }
#endif
    *out = f;
    return CAIRN_OK;
}

int cairn_follow_ended(const cairn_follow *f)
{
    return f == NULL || f->next_seq == 0 || f->next_seq > f->range.seq_to;
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

/* Read the watch's events so far (non-blocking); note a directory that
 * went away. */
static void drain(cairn_follow *f)
{
#ifdef __linux__
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    if (f->ifd < 0)
        return;
    while ((n = read(f->ifd, buf, sizeof buf)) > 0)
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))
                f->gone = 1;
            p += sizeof *ev + ev->len;
        }
#else
    (void)f;
#endif
}

/* Wait up to ms (< 0: no limit) for the directory to change. 0 when it
 * may have, -1 when the time ran out or a signal came. */
static int wait_change(cairn_follow *f, int ms)
{
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
    return r > 0 ? 0 : -1; /* the events are drained by the next look */
}

/* Past the range's time: the log's newest record is later than ts_to, and
 * a record committed from now on is no earlier (timestamps never go back). */
static int past_time(cairn_follow *f, uint64_t limit)
{
    cairn_record *last = NULL;
    int past;
    if (f->range.ts_to == INT64_MAX || limit == 0 || cairn_get(f->db, limit, &last) != CAIRN_OK)
        return 0;
    past = last->ts_ms > f->range.ts_to;
    cairn_record_free(f->db, last);
    return past;
}

int cairn_follow_next(cairn_follow *f, cairn_record *rec, int timeout_ms)
{
    long long until = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
    int rc;

    if (f == NULL || rec == NULL)
        return CAIRN_EINVAL;
    for (;;) {
        if (f->next_seq > f->range.seq_to || f->next_seq == 0)
            return CAIRN_ENOTFOUND; /* past the range: nothing more, ever */
        if (f->it == NULL) {
            cairn_range r = f->range;
            drain(f); /* before the look: a change after it wakes the wait */
            if (f->gone)
                return cairn__db_failf(f->db, CAIRN_EIO,
                                       "the store's directory %s was moved away or removed",
                                       f->db->path);
            r.seq_from = f->next_seq;
            if ((rc = cairn_iter_open(f->db, &r, &f->it)) != CAIRN_OK)
                return rc;
        }
        rc = cairn_iter_next(f->it, rec);
        if (rc == CAIRN_OK) {
            cairn__hole h;
            uint64_t end = rec->seq; /* the last seq the record stands for */
            if (rec->type == CAIRN_REC_COMPACTED &&
                cairn__hole_decode(rec->json, rec->json_len, rec->seq, &h, NULL) == CAIRN_OK &&
                h.upto > end)
                end = h.upto; /* a hole stands for every seq up to upto */
            if (end < f->next_seq)
                continue; /* all of it looked at already */
            f->next_seq = end + 1;
            return CAIRN_OK; /* lent until the next call: the iterator stays open */
        }
        {
            uint64_t limit = cairn__iter_limit(f->it);
            cairn_iter_close(f->it);
            f->it = NULL;
            if (rc != CAIRN_ENOTFOUND)
                return rc;
            /* every seq up to the limit was looked at: the next look starts after */
            if (limit + 1 > f->next_seq)
                f->next_seq = limit + 1;
            if (past_time(f, limit))
                f->next_seq = 0; /* nothing can come any more */
        }
        if (f->next_seq == 0 || timeout_ms == 0)
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
