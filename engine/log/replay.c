/*
 * replay.c - cairn_replay(): a new store holding this store's log up to a
 * seq, for offline analysis (format-spec/chain.md, "Replay").
 *
 * The copy keeps every record byte for byte, with its seq, time and
 * segment salt: the segments before the one holding the seq are copied
 * whole, that one is cut after the seq (a sealed one written anew with its
 * blocks up to there), and an empty active segment follows. So the copy's
 * hash chain at the seq is the source's, and the copy is checked against
 * it before the call returns. Derived files (index, graph, ACCESS) are not
 * copied: the copy's first open folds them from its log.
 */
#include "head.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "bytes.h"
#include "filehdr.h"
#include "hole.h"
#include "io.h"
#include "record.h"
#include "seqfile.h"

/* Write len bytes to a new file `name` in dirfd, fsynced when durable (a
 * view, thrown away after one read, is not). */
static int write_file(const cairn_io *io, int dirfd, const char *name, const uint8_t *b,
                      size_t len, int durable, cairn__err *e)
{
    int fd = -1, rc;
    rc = cairn__io_open(io, "replay.write", dirfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644, &fd,
                        e);
    if (rc != CAIRN_OK)
        return rc;
    rc = cairn__io_write_mapped(io, "replay.write", fd, b, len, 0, name, e); /* mapped, as its source */
    if (rc == CAIRN_OK && durable)
        rc = cairn__io_fsync(io, "replay.write", fd, name, e);
    cairn__io_close(io, "replay.write", fd);
    return rc;
}

/* A file the copy takes whole and nobody changes in place (a sealed or
 * closed segment, an index file): a hard link when views may share it,
 * else (or across file systems) a copy. */
static int take_whole(cairn_db *db, int dirfd, const char *name, const uint8_t *b, size_t len,
                      int link_ok, cairn__err *e)
{
    if (link_ok && linkat(db->dirfd, name, dirfd, name, 0) == 0)
        return CAIRN_OK;
    return write_file(db->io, dirfd, name, b, len, !link_ok, e);
}

/* Bytes [0, len) of a log-form segment, read through its fd. */
static int copy_log(cairn_db *db, int dirfd, const seg_ref *s, uint64_t len, int link_ok,
                    int durable, cairn__err *e)
{
    if (link_ok && len == s->log_file_size && linkat(db->dirfd, s->log.name, dirfd, s->log.name,
                                                     0) == 0)
        return CAIRN_OK; /* a closed segment, whole */
    uint8_t *b = cairn__malloc(db->a, len ? len : 1);
    size_t got;
    int rc;
    if (b == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "%s: no memory to copy it", s->log.name);
    rc = cairn__io_read(db->io, "replay.read", s->log.fd, b, (size_t)len, 0, &got, s->log.name,
                        e);
    if (rc == CAIRN_OK && got != len)
        rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: short read while copying it", s->log.name);
    if (rc == CAIRN_OK)
        rc = write_file(db->io, dirfd, s->log.name, b, (size_t)len, durable, e);
    cairn__free(db->a, b);
    return rc;
}

/* A sealed segment cut after seq `to`: blocks before the one holding it
 * as they are, that one's records up to `to`. *last_ts gets the time of
 * the last record kept. A hole reaching past `to` refuses the cut. */
static int cut_sealed(cairn_db *db, int dirfd, const seg_ref *s, uint64_t to, int64_t *last_ts,
                      uint64_t *bytes, cairn__err *e)
{
    char name[LOGSEG_NAME_MAX];
    cairn__sealw w;
    uint8_t *raw = NULL;
    size_t cap = 0, raw_len;
    uint64_t size;
    uint32_t k = cairn__sealed_find_seq(&s->s, to);
    int rc;

    if (k == s->s.block_count)
        return cairn__fail(e, CAIRN_ENOTFOUND, "%s: no block holds seq %llu", s->log.name,
                           (unsigned long long)to);
    cairn__logseg_name(name, s->id, "seg");
    rc = cairn__sealw_begin(&w, db->io, db->a, dirfd, name, s->id, s->s.salt, s->s.base_seq,
                            s->s.created_ms, 0, s->s.dict, s->s.dict_len, e);
    for (uint32_t i = 0; i <= k && rc == CAIRN_OK; i++) {
        sealed_block b;
        size_t pos = 0;
        cairn__sealed_block(&s->s, i, &b);
        if (i < k) { /* whole: copied as compressed */
            rc = cairn__sealw_copy_block(&w, &s->s, i, s->log.name, e);
            *last_ts = b.last_ts;
            *bytes += b.raw_len;
            continue;
        }
        rc = cairn__seg_read_block(db, s, i, NULL, &raw, &cap, &raw_len, e);
        if (rc != CAIRN_OK)
            break;
        while (pos < raw_len && rc == CAIRN_OK) {
            cairn_record rec;
            size_t len;
            uint64_t upto;
            if (cairn__record_decode(raw + pos, raw_len - pos, s->s.salt, &rec, &len) != REC_OK) {
                rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: block %u does not read (run cairn "
                                 "verify)", s->log.name, i);
                break;
            }
            if (rec.seq > to)
                break;
            upto = rec.seq;
            if (s->s.version >= 2 && rec.type == CAIRN_REC_COMPACTED) {
                cairn__hole h;
                if (cairn__hole_decode(rec.json, rec.json_len, rec.seq, &h, e) != CAIRN_OK) {
                    rc = CAIRN_ECORRUPT;
                    break;
                }
                upto = h.upto;
                if (upto > to) {
                    rc = cairn__fail(e, CAIRN_ENOTFOUND, "seq %llu lies in a hole: seqs "
                                     "%llu..%llu were dropped by a compaction (the store's "
                                     "retention policy); replay to %llu or to %llu",
                                     (unsigned long long)to, (unsigned long long)rec.seq,
                                     (unsigned long long)upto,
                                     (unsigned long long)(rec.seq - 1), (unsigned long long)upto);
                    break;
                }
            }
            rc = cairn__sealw_add(&w, raw + pos, len, rec.seq, upto, rec.ts_ms, e);
            *last_ts = rec.ts_ms;
            *bytes += len;
            pos += len;
        }
    }
    cairn__free(db->a, raw);
    if (rc == CAIRN_OK)
        return cairn__sealw_finish(&w, &size, e);
    cairn__sealw_abort(&w);
    return rc;
}

/* A failed copy: what it wrote goes (the directory was empty), and the
 * directory too when it made it. */
static void remove_written(int dirfd, const char *dir, int made)
{
    DIR *d = cairn__io_opendir(dirfd);
    struct dirent *de;
    if (d != NULL) {
        while ((de = readdir(d)) != NULL)
            if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                unlinkat(dirfd, de->d_name, 0);
        closedir(d);
    }
    if (made)
        rmdir(dir);
}

/* The directory for the copy: made (*made), or empty. */
static int open_target(const char *dir, int *dirfd, int *made, cairn__err *e)
{
    int fd;
    *made = mkdir(dir, 0755) == 0;
    if (!*made && errno != EEXIST)
        return cairn__fail(e, CAIRN_EIO, "%s: cannot make it: %s", dir, strerror(errno));
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return cairn__fail(e, CAIRN_EIO, "%s: cannot open it: %s", dir, strerror(errno));
    {
        DIR *d = cairn__io_opendir(fd);
        struct dirent *de;
        int empty = 1;
        if (d == NULL) {
            close(fd);
            return cairn__fail(e, CAIRN_EIO, "%s: cannot list it", dir);
        }
        while ((de = readdir(d)) != NULL)
            if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                empty = 0;
        closedir(d);
        if (!empty) {
            close(fd);
            return cairn__fail(e, CAIRN_EEXIST, "%s is not empty: replay writes a new store",
                               dir);
        }
    }
    *dirfd = fd;
    return CAIRN_OK;
}

/* The listed index files covering at most `to` (and the chains they lie
 * on), linked into the view and listed in its MANIFEST (m): its first open
 * folds from them, not from seq 1. A copy lists none (its store id is new:
 * no file of the source binds to it). */
static void link_index_files(cairn_db *db, int dirfd, uint64_t to, int as_view, manifest *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_files && as_view; i++) {
        const manifest_file *f = &m->files[i];
        char name[64];
        if (f->seq > to)
            continue;
        cairn__seqfile_name(cairn__seqfile_kind_of(f->kind), f->seq, name, sizeof name);
        if (linkat(db->dirfd, name, dirfd, name, 0) == 0) /* a miss costs a fold */
            m->files[n++] = *f;
    }
    m->n_files = n;
}

int cairn_replay(cairn_db *db, uint64_t to, const char *dir, cairn_replay_report *out)
{
    return cairn_replay_ex(db, to, dir, 0, out);
}

int cairn_replay_ex(cairn_db *db, uint64_t to, const char *dir, unsigned flags,
                    cairn_replay_report *out)
{
    int as_view = (flags & CAIRN_REPLAY_VIEW) != 0;
    cairn__err e;
    view *v;
    manifest m;
    logseg act;
    uint8_t want[CHAIN_LEN] = {0};
    size_t idx;
    int dirfd = -1, whole = 0, made = 0, rc;
    uint64_t next_id;

    if (db == NULL || dir == NULL || out == NULL || to == 0)
        return CAIRN_EINVAL;
    memset(out, 0, sizeof *out);
    memset(&m, 0, sizeof m);
    pthread_mutex_lock(&db->mu);
    rc = db->dead ? CAIRN_OK : cairn__refresh(db);
    v = db->view;
    atomic_fetch_add(&v->refs, 1);
    pthread_mutex_unlock(&db->mu);
    if (rc != CAIRN_OK) {
        cairn__view_release(db, v);
        return rc;
    }
    /* A compaction dropped records of the state before dropped_upto (the
     * records of memories gone later, and their going): below it the log
     * no longer tells what was live then. */
    if (to < v->m.dropped_upto) {
        char pol[96];
        cairn_retain_format(&v->m.retain, pol, sizeof pol);
        cairn__view_release(db, v);
        return cairn__db_failf(db, CAIRN_ENOTFOUND, "the state at seq %llu cannot be rebuilt: a "
                               "compaction under the retention policy %s dropped records up to "
                               "seq %llu; choose seq %llu or later",
                               (unsigned long long)to, pol, (unsigned long long)v->m.dropped_upto,
                               (unsigned long long)v->m.dropped_upto);
    }
    /* The source's chain at `to`: what the copy must give (a view, not
     * checked, takes none). */
    rc = as_view ? CAIRN_OK : cairn__chain_at(db, v, to, want, &e);
    for (idx = 0; rc == CAIRN_OK && idx < v->m.n; idx++)
        if (v->m.e[idx].kind == SEG_ACTIVE || v->m.e[idx].last_seq >= to)
            break;
    /* Past the newest record (a view takes no chain value, which would
     * have said so): nothing to cut at. */
    if (rc == CAIRN_OK && !v->segs[idx]->sealed) {
        const seg_ref *s = v->segs[idx];
        uint64_t have;
        pthread_mutex_lock(&db->mu); /* the active segment's index grows */
        have = s->log.n;
        pthread_mutex_unlock(&db->mu);
        if (to < s->log.base_seq || to - s->log.base_seq >= have)
            rc = cairn__fail(&e, CAIRN_ENOTFOUND, "seq %llu is past the end of the log (its "
                             "newest record is seq %llu)", (unsigned long long)to,
                             (unsigned long long)(s->log.base_seq + have - 1));
    }
    /* A sealed segment that ends at `to` is copied whole, as those before. */
    whole = rc == CAIRN_OK && v->segs[idx]->sealed && v->m.e[idx].last_seq == to;
    if (rc == CAIRN_OK)
        rc = open_target(dir, &dirfd, &made, &e);
    if (rc == CAIRN_OK)
        rc = cairn__manifest_copy(&v->m, db->a, &m) == CAIRN_OK ? CAIRN_OK
                                                                : cairn__fail(&e, CAIRN_ENOMEM,
                                                                              "no memory");
    for (size_t i = 0; i < idx + (size_t)whole && rc == CAIRN_OK; i++) {
        const seg_ref *s = v->segs[i];
        char name[LOGSEG_NAME_MAX];
        if (s->sealed) {
            cairn__seg_file_name(name, s->id, s->rev);
            rc = take_whole(db, dirfd, name, s->map, s->map_len, as_view, &e);
            out->bytes += s->s.raw_bytes;
        } else {
            rc = copy_log(db, dirfd, s, s->log.end, as_view, !as_view, &e);
            out->bytes += s->log.end - FILEHDR_SIZE;
        }
        out->segments++;
    }
    if (rc == CAIRN_OK && !whole) {
        const seg_ref *s = v->segs[idx];
        manifest_entry *x = &m.e[idx];
        int64_t last_ts = 0;
        if (s->sealed) {
            rc = cut_sealed(db, dirfd, s, to, &last_ts, &out->bytes, &e);
            x->rev = 0;
            x->chained = !as_view; /* the value at `to`, checked below */
            memcpy(x->chain, want, CHAIN_LEN);
        } else {
            uint64_t end, n;
            pthread_mutex_lock(&db->mu); /* the active segment's index */
            n = to - s->log.base_seq + 1;
            end = n < s->log.n ? s->log.off[n] : s->log.end;
            last_ts = s->log.ts[n - 1];
            x->first_ts = s->log.ts[0];
            pthread_mutex_unlock(&db->mu);
            rc = copy_log(db, dirfd, s, end, 0, !as_view, &e);
            x->kind = SEG_CLOSED;
            x->chained = 0;
            out->bytes += end - FILEHDR_SIZE;
        }
        x->last_seq = to;
        x->count = to - x->base_seq + 1;
        x->last_ts = last_ts;
        out->segments++;
    }
    cairn__view_release(db, v);
    /* An empty active segment after it, and the MANIFEST naming them. */
    next_id = m.n > 0 ? m.e[m.n - 1].id + 1 : 1;
    if (rc == CAIRN_OK)
        rc = cairn__logseg_create(db->io, dirfd, &act, next_id, cairn__random_salt(), to + 1,
                                  cairn__now_ms(), &e);
    if (rc == CAIRN_OK) {
        manifest_entry *grown = cairn__realloc(db->a, m.e, (idx + 2) * sizeof *m.e);
        cairn__logseg_free(db->io, db->a, &act);
        if (grown == NULL) {
            rc = cairn__fail(&e, CAIRN_ENOMEM, "no memory for the copy's MANIFEST");
            goto written;
        }
        m.e = grown;
        m.n = idx + 2;
        memset(&m.e[idx + 1], 0, sizeof m.e[idx + 1]);
        m.e[idx + 1].id = next_id;
        m.e[idx + 1].kind = SEG_ACTIVE;
        m.e[idx + 1].base_seq = to + 1;
        m.next_id = next_id + 1;
        m.generation = 1;
        if (!as_view)
            cairn__store_id_new(m.store_id); /* a view keeps it: its index files bind to it */
        m.synced_seq = to; /* every record of the copy is on disk now */
        m.lost_total = 0;
        if (m.dropped_upto > to)
            m.dropped_upto = to;
        m.deaths_dropped = 0; /* recounted by the copy's first compaction */
        link_index_files(db, dirfd, to, as_view, &m);
        rc = cairn__manifest_write(db->io, dirfd, &m, db->a, &e);
    }
written:
    if (m.e != NULL)
        cairn__manifest_free(db->a, &m);
    if (dirfd >= 0 && rc != CAIRN_OK)
        remove_written(dirfd, dir, made);
    if (dirfd >= 0)
        close(dirfd);
    if (rc != CAIRN_OK)
        return cairn__db_fail(db, rc, &e);
    if (as_view) { /* taken for one read and thrown away: not checked whole */
        out->seq = to;
        return CAIRN_OK;
    }

    /* The copy must hold exactly the source's history up to `to`. */
    {
        cairn_options o = CAIRN_OPTIONS_INIT;
        char err[CAIRN_ERRMSG_MAX] = "";
        cairn_db *copy = NULL;
        cairn_head wh;
        cairn_verify_report vr;
        wh.seq = to;
        memcpy(wh.hash, want, CHAIN_LEN);
        o.read_only = 1;
        rc = cairn_open(&copy, dir, &o, err, sizeof err);
        if (rc != CAIRN_OK)
            return cairn__db_failf(db, rc, "%s: the copy does not open: %s", dir, err);
        rc = cairn_verify_head(copy, &wh, NULL, NULL, &vr);
        if (rc == CAIRN_OK)
            rc = cairn_head_get(copy, &out->head);
        cairn_close(copy);
        if (rc != CAIRN_OK)
            return cairn__db_failf(db, rc, "%s: the copy could not be checked", dir);
        if (vr.problems != 0 || !vr.head_proven || out->head.seq != to ||
            memcmp(out->head.hash, want, CHAIN_LEN) != 0)
            return cairn__db_failf(db, CAIRN_ECORRUPT, "%s: the copy does not hold the history "
                                   "up to seq %llu (%llu problems; run cairn verify on it)",
                                   dir, (unsigned long long)to, (unsigned long long)vr.problems);
    }
    out->seq = to;
    return CAIRN_OK;
}

int cairn_seq_at_time(cairn_db *db, int64_t ts_ms, uint64_t *seq_out)
{
    cairn_range r = CAIRN_RANGE_INIT;
    cairn_iter *it = NULL;
    cairn_record rec;
    uint64_t before = 0, sum;
    int rc, sealed;

    if (db == NULL || seq_out == NULL)
        return CAIRN_EINVAL;
    *seq_out = 0;
    /* The first record after ts_ms (found by time, block by block): the
     * newest record before it is the one; numbers recovery retired in
     * between are passed over. */
    if (ts_ms != INT64_MAX) {
        r.ts_from = ts_ms + 1;
        if ((rc = cairn_iter_open(db, &r, &it)) != CAIRN_OK)
            return rc;
        rc = cairn_iter_next(it, &rec);
        if (rc == CAIRN_OK)
            before = rec.seq - 1;
        else if (rc == CAIRN_ENOTFOUND)
            before = cairn__iter_limit(it);
        cairn_iter_close(it);
        if (rc != CAIRN_OK && rc != CAIRN_ENOTFOUND)
            return rc;
    } else {
        before = cairn__handed_seq(db);
    }
    return cairn__record_at_or_before(db, before, seq_out, &sum, &sealed);
}

/* ".as-of-<pid>-XXXXXX": the pid of the process a view is for. */
static int view_pid(const char *name, long *pid)
{
    char *end;
    if (strncmp(name, CAIRN_VIEW_PREFIX, sizeof CAIRN_VIEW_PREFIX - 1) != 0)
        return 0;
    *pid = strtol(name + sizeof CAIRN_VIEW_PREFIX - 1, &end, 10);
    return *pid > 0 && *end == '-';
}

uint64_t cairn__views_sweep(cairn_db *db, int all)
{
    DIR *d = cairn__io_opendir(db->dirfd);
    struct dirent *de;
    uint64_t n = 0;
    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        long pid;
        int fd;
        if (!view_pid(de->d_name, &pid))
            continue;
        if (!all && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue; /* its process may still read it */
        fd = openat(db->dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        remove_written(fd, NULL, 0);
        close(fd);
        if (unlinkat(db->dirfd, de->d_name, AT_REMOVEDIR) == 0)
            n++;
    }
    closedir(d);
    return n;
}
