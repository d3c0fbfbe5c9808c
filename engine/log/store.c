/*
 * store.c - opening and closing a store, the writer lock, recovery, views
 * (refcounted snapshots of the manifest), refreshing read-only handles, and
 * stats.
 *
 * Recovery on a writer open, in order:
 *  1. read MANIFEST (a missing one creates a store only when asked to and
 *     only in a directory without segment files; a bad one is an error,
 *     never a reason to start over);
 *  2. delete orphans: temp files, and segment files the manifest does not
 *     name (a roll or seal that crashed before its manifest swap);
 *  3. scan the closed and active .log segments. After the active one's last
 *     valid record comes either a torn tail (nothing valid follows), which
 *     is truncated, or damage with valid records after it, which is copied
 *     to <id>-<offset>.damaged, then a roll starts a new segment past the
 *     highest sequence number found there (recorded in MANIFEST), and only
 *     then is the damaged segment truncated;
 *  4. remove a sealed entry's leftover .log once its .seg has validated;
 *  5. queue closed segments for sealing.
 * Every record wholly written before the crash is kept or set aside; nothing
 * is invented, nothing valid is destroyed, no sequence number is reused.
 */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "bytes.h"
#include "filehdr.h"
#include "io.h"
#include "seqfile.h"

int64_t cairn__now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int cairn__db_fail(cairn_db *db, int code, const cairn__err *e)
{
    pthread_mutex_lock(&db->err_mu);
    char *buf = cairn__errbuf(db);
    if (e != NULL && e->msg != buf)
        memcpy(buf, e->msg, CAIRN_ERRMSG_MAX);
    pthread_mutex_unlock(&db->err_mu);
    return code;
}

int cairn__db_failf(cairn_db *db, int code, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&db->err_mu);
    va_start(ap, fmt);
    vsnprintf(cairn__errbuf(db), CAIRN_ERRMSG_MAX, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&db->err_mu);
    return code;
}

const char *cairn_errmsg(const cairn_db *db)
{
    return cairn__errbuf(db); /* NULL: the calls without a handle */
}

/* ---- segments and views ------------------------------------------------ */

void cairn__seg_release(cairn_db *db, seg_ref *s)
{
    if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    cairn__sealed_undigest(&s->s);
    if (s->map != NULL)
        munmap(s->map, s->map_len);
    cairn__logseg_free(db->io, db->a, &s->log);
    cairn__free(db->a, s);
}

static seg_ref *seg_new(cairn_db *db)
{
    seg_ref *s = cairn__calloc(db->a, 1, sizeof *s);
    if (s != NULL) {
        atomic_init(&s->refs, 1);
        s->log.fd = -1;
    }
    return s;
}

void cairn__seg_file_name(char *buf, uint64_t id, uint32_t rev)
{
    if (rev == 0)
        cairn__logseg_name(buf, id, "seg");
    else
        snprintf(buf, LOGSEG_NAME_MAX, "%016llx-%08x.seg", (unsigned long long)id, rev);
}

int cairn__seg_open_sealed(cairn_db *db, uint64_t id, uint32_t rev, seg_ref **out,
                           cairn__err *e)
{
    char name[LOGSEG_NAME_MAX];
    struct stat st;
    seg_ref *s;
    int fd = -1, rc;

    cairn__seg_file_name(name, id, rev);
    s = seg_new(db);
    if (s == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "%s: no memory", name);
    s->sealed = 1;
    s->id = id;
    s->rev = rev;
    memcpy(s->log.name, name, sizeof name);
    rc = cairn__io_open(db->io, "sealed.open", db->dirfd, name, O_RDONLY, 0, &fd, e);
    if (rc != CAIRN_OK)
        goto fail;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: empty or unreadable", name);
        goto fail;
    }
    s->map_len = (size_t)st.st_size;
    s->map = mmap(NULL, s->map_len, PROT_READ, MAP_SHARED, fd, 0);
    if (s->map == MAP_FAILED) {
        s->map = NULL;
        rc = cairn__fail(e, cairn__errno_status(errno), "mmap %s: %s", name, strerror(errno));
        goto fail;
    }
    rc = cairn__sealed_open(s->map, s->map_len, &s->s, name, e);
    if (rc == CAIRN_OK && s->s.id != id)
        rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: header names segment %llu", name,
                         (unsigned long long)s->s.id);

    if (rc != CAIRN_OK)
        goto fail;
    cairn__io_close(db->io, "sealed.open", fd);
    *out = s;
    return CAIRN_OK;
fail:
    cairn__io_close(db->io, "sealed.open", fd);
    cairn__seg_release(db, s);
    return rc;
}

int cairn__seg_read_block(cairn_db *db, const seg_ref *s, uint32_t i, void *dctx, uint8_t **buf,
                          size_t *cap, size_t *raw_len, cairn__err *e)
{
    /* The digested dictionary is made on the first read of the segment
     * (an open touches no block), by whichever thread comes first; the
     * others free theirs. It is the segment's cache, not its state. */
    sealed_seg *ss = (sealed_seg *)(uintptr_t)&s->s;
    void *ddict = ss->dict_len ? __atomic_load_n(&ss->ddict, __ATOMIC_ACQUIRE) : NULL;
    if (ss->dict_len != 0 && ddict == NULL) {
        sealed_seg mine; /* the dictionary alone: ss->ddict may be another's */
        void *none = NULL;
        int rc;
        memset(&mine, 0, sizeof mine);
        mine.dict = ss->dict;
        mine.dict_len = ss->dict_len;
        if ((rc = cairn__sealed_digest(&mine, s->log.name, e)) != CAIRN_OK)
            return rc;
        if (__atomic_compare_exchange_n(&ss->ddict, &none, mine.ddict, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            ddict = mine.ddict;
        } else {
            ddict = none; /* another thread's, installed meanwhile */
            cairn__sealed_undigest(&mine);
        }
    }
    return cairn__sealed_read_block_with(ss, i, dctx, ddict, db->a, buf, cap, raw_len, s->log.name,
                                         e);
}

/* Copy bytes [from, to) of a segment to <id>-<from>.damaged, fsynced. */
static int set_aside(cairn_db *db, const logseg *l, uint64_t from, uint64_t to, cairn__err *e)
{
    char name[64];
    uint8_t *buf = cairn__malloc(db->a, 1u << 20);
    int fd = -1, rc;

    snprintf(name, sizeof name, "%016llx-%016llx.damaged", (unsigned long long)l->id,
             (unsigned long long)from);
    if (buf == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "no memory to set damaged bytes aside");
    rc = cairn__io_open(db->io, "recover.setaside", db->dirfd, name,
                        O_WRONLY | O_CREAT | O_TRUNC, 0644, &fd, e);
    for (uint64_t off = from; rc == CAIRN_OK && off < to;) {
        size_t got, want = to - off < (1u << 20) ? (size_t)(to - off) : (1u << 20);
        rc = cairn__io_read(db->io, "recover.setaside", l->fd, buf, want, off, &got, l->name, e);
        if (rc == CAIRN_OK && got == 0)
            break;
        if (rc == CAIRN_OK)
            rc = cairn__io_write(db->io, "recover.setaside", fd, buf, got, off - from, name, e);
        off += got;
    }
    if (rc == CAIRN_OK)
        rc = cairn__io_fsync(db->io, "recover.setaside", fd, name, e);
    if (rc == CAIRN_OK)
        rc = cairn__io_fsync(db->io, "recover.setaside.dir", db->dirfd, ".", e);
    cairn__io_close(db->io, "recover.setaside", fd);
    cairn__free(db->a, buf);
    return rc;
}

static int truncate_tail(cairn_db *db, seg_ref *s, cairn__err *e);

/* After a scan of a log segment stopped before the end of its file: is the
 * rest a torn tail (nothing valid follows: truncate it) or damage (valid
 * records follow)? The writer sets damaged bytes aside before truncating,
 * so nothing valid is ever destroyed, and raises the sequence floor so their
 * numbers are never given again; a reader only flags the damage. */
static int check_tail(cairn_db *db, seg_ref *s, const logseg_stop *stop, int writable,
                      cairn__err *e)
{
    uint64_t max_seq;
    int found, rc;

    s->log_file_size = stop->file_size;
    s->damaged_at = 0;
    if (stop->file_size <= s->log.end)
        return CAIRN_OK;
    rc = cairn__logseg_probe(db->io, db->a, &s->log, s->log.end, stop->file_size, &found,
                             &max_seq, e);
    if (rc != CAIRN_OK)
        return rc;
    if (!writable) {
        if (found) {
            s->damaged_at = s->log.end;
            s->damaged_max_seq = max_seq;
        }
        return CAIRN_OK;
    }
    if (found) {
        /* Copy aside now; the segment is truncated only after a roll has
         * recorded the sequence floor in the MANIFEST (cairn_open), so a
         * crash in between finds the same damage again, never a clean tail
         * whose numbers could be reused. */
        rc = set_aside(db, &s->log, s->log.end, stop->file_size, e);
        if (rc != CAIRN_OK)
            return rc;
        db->set_aside_bytes += stop->file_size - s->log.end;
        if (max_seq + 1 > db->seq_floor)
            db->seq_floor = max_seq + 1;
        return CAIRN_OK;
    }
    db->torn_bytes += stop->file_size - s->log.end;
    return truncate_tail(db, s, e);
}

/* Cut a log segment's file after its last valid record, durably. */
static int truncate_tail(cairn_db *db, seg_ref *s, cairn__err *e)
{
    int rc = cairn__io_truncate(db->io, "recover.truncate", s->log.fd, s->log.end, s->log.name, e);
    if (rc == CAIRN_OK)
        rc = cairn__io_fsync(db->io, "recover.fsync", s->log.fd, s->log.name, e);
    if (rc == CAIRN_OK)
        s->log_file_size = s->log.end;
    return rc;
}

/* Scan a log segment further (read-only handles follow the writer). */
static int log_rescan(cairn_db *db, seg_ref *s, cairn__err *e)
{
    logseg_stop stop;
    int rc = cairn__logseg_scan(db->io, db->a, &s->log, &stop, e);
    return rc == CAIRN_OK ? check_tail(db, s, &stop, 0, e) : rc;
}

/* Open a log segment (closed or active) and index it; the writer recovers
 * the active one's tail. */
static int seg_open_log(cairn_db *db, const manifest_entry *x, seg_ref **out, cairn__err *e)
{
    seg_ref *s = seg_new(db);
    logseg_stop stop;
    /* A writer appends to the active segment: opened read-write. It
     * recovers the tail only in a turn: otherwise the bytes past the last
     * valid record may be another process's write in flight. */
    int rw = !db->read_only && x->kind == SEG_ACTIVE;
    int writable = rw && db->turn_held;
    int rc;

    if (s == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "no memory");
    s->id = x->id;
    rc = cairn__logseg_open(db->io, db->a, db->dirfd, &s->log, x->id, !rw, &stop, e);
    if (rc == CAIRN_OK && s->log.base_seq != x->base_seq)
        rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: base_seq %llu, manifest says %llu", s->log.name,
                         (unsigned long long)s->log.base_seq, (unsigned long long)x->base_seq);
    if (rc == CAIRN_OK)
        rc = check_tail(db, s, &stop, writable, e);
    if (rc != CAIRN_OK) {
        cairn__seg_release(db, s);
        return rc;
    }
    *out = s;
    return CAIRN_OK;
}

int cairn__view_make(cairn_db *db, const manifest *m, seg_ref **segs, view **out)
{
    view *v = cairn__calloc(db->a, 1, sizeof *v);
    if (v == NULL)
        return CAIRN_ENOMEM;
    atomic_init(&v->refs, 1);
    v->segs = cairn__calloc(db->a, m->n ? m->n : 1, sizeof *v->segs);
    if (v->segs == NULL || cairn__manifest_copy(m, db->a, &v->m) != CAIRN_OK) {
        cairn__free(db->a, v->segs);
        cairn__free(db->a, v);
        return CAIRN_ENOMEM;
    }
    for (size_t i = 0; i < m->n; i++) {
        v->segs[i] = segs[i];
        atomic_fetch_add(&segs[i]->refs, 1);
    }
    *out = v;
    return CAIRN_OK;
}

void cairn__view_release(cairn_db *db, view *v)
{
    if (v == NULL || atomic_fetch_sub(&v->refs, 1) != 1)
        return;
    for (size_t i = 0; i < v->m.n; i++)
        cairn__seg_release(db, v->segs[i]);
    cairn__free(db->a, v->segs);
    cairn__manifest_free(db->a, &v->m);
    cairn__free(db->a, v);
}

view *cairn__view_acquire(cairn_db *db)
{
    view *v;
    pthread_mutex_lock(&db->mu);
    v = db->view;
    atomic_fetch_add(&v->refs, 1);
    pthread_mutex_unlock(&db->mu);
    return v;
}

void cairn__view_publish(cairn_db *db, view *nv)
{
    view *old = db->view;
    db->view = nv;
    cairn__view_release(db, old);
}

/* Open every segment a manifest names, reusing those of `old` (may be NULL)
 * with the same id and form. */
static int segs_open(cairn_db *db, const manifest *m, const view *old, seg_ref ***out,
                     cairn__err *e)
{
    seg_ref **segs = cairn__calloc(db->a, m->n ? m->n : 1, sizeof *segs);
    int rc = CAIRN_OK;
    size_t i;

    if (segs == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "no memory");
    for (i = 0; i < m->n && rc == CAIRN_OK; i++) {
        const manifest_entry *x = &m->e[i];
        int want_sealed = x->kind == SEG_SEALED;
        if (old != NULL) {
            for (size_t j = 0; j < old->m.n; j++) {
                seg_ref *o = old->segs[j];
                if (o->id == x->id && o->sealed == want_sealed && o->rev == x->rev) {
                    segs[i] = o;
                    atomic_fetch_add(&o->refs, 1);
                    /* It may have grown (read-only handles follow the writer). */
                    if (!o->sealed && old->m.e[j].kind == SEG_ACTIVE)
                        rc = log_rescan(db, o, e);
                    break;
                }
            }
            if (segs[i] != NULL)
                continue;
        }
        rc = want_sealed ? cairn__seg_open_sealed(db, x->id, x->rev, &segs[i], e)
                         : seg_open_log(db, x, &segs[i], e);
    }
    if (rc != CAIRN_OK) {
        for (size_t j = 0; j < m->n; j++)
            cairn__seg_release(db, segs[j]);
        cairn__free(db->a, segs);
        return rc;
    }
    *out = segs;
    return CAIRN_OK;
}

/* Build a view of manifest m; consumes nothing. */
static int view_build(cairn_db *db, const manifest *m, const view *old, view **out,
                      cairn__err *e)
{
    seg_ref **segs = NULL;
    int rc = segs_open(db, m, old, &segs, e);
    if (rc != CAIRN_OK)
        return rc;
    rc = cairn__view_make(db, m, segs, out);
    for (size_t i = 0; i < m->n; i++)
        cairn__seg_release(db, segs[i]);
    cairn__free(db->a, segs);
    if (rc != CAIRN_OK)
        return cairn__fail(e, rc, "no memory for a view");
    return CAIRN_OK;
}

/* A segment the MANIFEST names is not there (for a reader: still not
 * there after re-reading the MANIFEST, so not a seal in progress). The
 * store exists but is damaged: never CAIRN_ENOTFOUND, which says "no store". */
static int missing_segment(cairn_db *db, cairn__err *e)
{
    char msg[CAIRN_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", e->msg);
    return cairn__fail(e, CAIRN_ECORRUPT, "store %s: a segment the MANIFEST names is missing: %s",
                       db->path, msg);
}

/* Has the MANIFEST been replaced since this handle last read it? Every
 * write of it is a rename of a new file, so its inode, size and times
 * change; *st is what to note once it is read. */
static int manifest_changed(cairn_db *db, struct stat *st)
{
    if (fstatat(db->dirfd, MANIFEST_NAME, st, AT_SYMLINK_NOFOLLOW) != 0) {
        memset(st, 0, sizeof *st);
        return 1; /* the read says what is wrong */
    }
    return (uint64_t)st->st_ino != db->man_ino || (uint64_t)st->st_size != db->man_size ||
           (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec != db->man_mtime_ns ||
           (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec != db->man_ctime_ns;
}

static void manifest_noted(cairn_db *db, const struct stat *st)
{
    db->man_ino = (uint64_t)st->st_ino;
    db->man_size = (uint64_t)st->st_size;
    db->man_mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    db->man_ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

int cairn__db_manifest_write(cairn_db *db, const manifest *m, cairn__err *e)
{
    struct stat st;
    int rc = cairn__manifest_write(db->io, db->dirfd, m, db->a, e);
    /* Written in a turn: the file there now is this one, so the next
     * catch-up need not read it back. */
    if (rc == CAIRN_OK) {
        (void)manifest_changed(db, &st);
        manifest_noted(db, &st);
    }
    return rc;
}

/* Read the active segment further if its file grew (mu held). */
static int rescan_active(cairn_db *db, cairn__err *e)
{
    seg_ref *act = db->view->segs[db->view->m.n - 1];
    struct stat st;

    if (act->sealed)
        return CAIRN_OK;
    if (fstat(act->log.fd, &st) == 0 &&
        ((uint64_t)st.st_size == act->log.end || (uint64_t)st.st_size == act->log_file_size))
        return CAIRN_OK; /* nothing new: no read */
    /* Shorter than the records this handle has seen in it: nobody cuts
     * valid records, so the file system lost them. Never write after a
     * hole; a reopen recovers what is there. */
    if ((uint64_t)st.st_size < act->log.end && db->wbuf_len == 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s is %lld bytes, shorter than the %llu of records "
                           "this handle read in it: records are gone; reopen the store",
                           act->log.name, (long long)st.st_size,
                           (unsigned long long)act->log.end);
    return log_rescan(db, act, e);
}

/* Take the MANIFEST as it is now, and the segments it names. */
static int reload(cairn_db *db, cairn__err *e)
{
    int rc = CAIRN_OK;

    /* Another process may seal and unlink a .log between our reading
     * MANIFEST and opening the file: read the manifest again and retry. */
    for (int attempt = 0; attempt < 20; attempt++) {
        struct stat st;
        manifest m;
        view *nv;
        (void)manifest_changed(db, &st);
        rc = cairn__manifest_read(db->io, db->dirfd, db->a, &m, e);
        if (rc != CAIRN_OK)
            return rc;
        /* Always a new view, even of the same generation: the file is not
         * the one this handle read (a write of it whose outcome this handle
         * could not know may have left the same number with other
         * contents). Its segments are reused; the active one is read on. */
        rc = view_build(db, &m, db->view, &nv, e);
        cairn__manifest_free(db->a, &m);
        if (rc == CAIRN_OK) {
            cairn__view_publish(db, nv);
            manifest_noted(db, &st);
            return CAIRN_OK;
        }
        if (rc != CAIRN_ENOTFOUND)
            return rc;
    }
    return missing_segment(db, e);
}

/* Damage with valid records after it, found in the active segment by a
 * writer holding the lock (check_tail set them aside and raised the
 * floor): start a new segment past their numbers, then cut the damaged
 * segment (the floor is durable now). mu held. */
static int retire_damage(cairn_db *db, cairn__err *e)
{
    seg_ref *damaged = db->act;
    int rc;

    atomic_fetch_add(&damaged->refs, 1);
    rc = cairn__roll_past(db, db->seq_floor);
    if (rc != CAIRN_OK)
        memcpy(e->msg, cairn__errbuf(db), sizeof e->msg);
    else
        rc = truncate_tail(db, damaged, e);
    cairn__seg_release(db, damaged);
    return rc;
}

/* A writer takes the log's end as its own (mu held): the active segment
 * (another process may have rolled), the next sequence number, the newest
 * timestamp, the offset to write at. */
static int adopt_log_end(cairn_db *db, int locked, cairn__err *e)
{
    view *v = db->view;
    seg_ref *act = v->segs[v->m.n - 1];
    uint64_t next;
    int rc;

    if (act->sealed || v->m.e[v->m.n - 1].kind != SEG_ACTIVE)
        return cairn__fail(e, CAIRN_ECORRUPT, "store %s: the MANIFEST's last segment is not "
                           "active", db->path);
    if (act != db->act) {
        seg_ref *old = db->act;
        atomic_fetch_add(&act->refs, 1);
        db->act = act;
        db->act_reserve_tried = 0;
        /* Records this handle wrote to the segment another process closed
         * and that are not synced yet: sync them now, the flusher syncs
         * only the active one. */
        rc = CAIRN_OK;
        if (old != NULL && atomic_load(&db->durable_seq) < db->written_seq &&
            db->durability != CAIRN_DURABILITY_NONE)
            rc = cairn__io_fdatasync(db->io, "closed.fdatasync", old->log.fd, old->log.name, e);
        cairn__seg_release(db, old);
        if (rc != CAIRN_OK)
            return rc;
    }
    if (locked && act->log_file_size > act->log.end) {
        /* A writer that died in its turn tore the tail: as an open does. */
        logseg_stop stop;
        memset(&stop, 0, sizeof stop);
        stop.file_size = act->log_file_size;
        rc = check_tail(db, act, &stop, 1, e);
        if (rc != CAIRN_OK)
            return rc;
    }
    next = act->log.base_seq + act->log.n;
    if (next > db->next_seq || locked)
        db->next_seq = next;
    db->written_seq = db->next_seq - 1;
    if (act->log.n > 0 && act->log.ts[act->log.n - 1] > db->last_ts)
        db->last_ts = act->log.ts[act->log.n - 1];
    else if (act->log.n == 0 && v->m.n > 1 && v->m.e[v->m.n - 2].last_ts > db->last_ts)
        db->last_ts = v->m.e[v->m.n - 2].last_ts;
    db->wbuf_off = act->log.end;
    for (size_t i = 0; i < v->m.n; i++)
        if (v->m.e[i].kind == SEG_CLOSED && !db->seal_pending) {
            db->seal_pending = 1;
            pthread_cond_signal(&db->seal_cv);
        }
    if (locked && db->seq_floor > db->next_seq)
        return retire_damage(db, e);
    return CAIRN_OK;
}

int cairn__catch_up(cairn_db *db, int locked)
{
    cairn__err e;
    struct stat st;
    int rc;


    e.msg[0] = '\0';
    rc = manifest_changed(db, &st) ? reload(db, &e) : rescan_active(db, &e);
    if (rc == CAIRN_OK && !db->read_only && !db->dead)
        rc = adopt_log_end(db, locked, &e);
    return rc == CAIRN_OK ? CAIRN_OK : cairn__db_fail(db, rc, &e);
}

int cairn__db_refresh(cairn_db *db)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db->dead ? CAIRN_OK : cairn__refresh(db);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int cairn__refresh(cairn_db *db)
{
    int rc;
    if (!db->turn_held)
        return cairn__catch_up(db, 0);
    rc = db->dead ? CAIRN_OK : cairn__flush_locked(db);
    cairn__turn_release(db); /* the buffer is in the file: the turn may end */
    return rc;
}

/* ---- opening ------------------------------------------------------------ */

/* n lowercase hex digits at p; 1 and the value if they are. */
/* Parse "<16 hex>.<ext>" names; returns 1 and the id for a match. */
static int parse_seg_name(const char *name, const char *ext, uint64_t *id)
{
    size_t el = strlen(ext);
    if (strlen(name) != 17 + el || name[16] != '.' || strcmp(name + 17, ext) != 0)
        return 0;
    return cairn__hex_lower(name, 16, id);
}

/* Parse "<16 hex>.seg" (rev 0) and "<16 hex>-<8 hex>.seg" (a compacted
 * segment, rev > 0). */
static int parse_sealed_name(const char *name, uint64_t *id, uint32_t *rev)
{
    uint64_t r;
    *rev = 0;
    if (parse_seg_name(name, "seg", id))
        return 1;
    if (strlen(name) != 29 || name[16] != '-' || strcmp(name + 25, ".seg") != 0 ||
        !cairn__hex_lower(name, 16, id) || !cairn__hex_lower(name + 17, 8, &r) || r == 0)
        return 0;
    *rev = (uint32_t)r;
    return 1;
}

static const manifest_entry *find_entry(const manifest *m, uint64_t id)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->e[i].id == id)
            return &m->e[i];
    return NULL;
}

/* Does the directory hold segment files of a store whose MANIFEST is gone?
 * Segment 1 holding no record (at most its header) is not one: it is what a
 * crash during creation leaves before the first MANIFEST, and is removed. */
static int has_segments(cairn_db *db)
{
    int found = 0, first_empty = 0;
    DIR *d = cairn__io_opendir(db->dirfd);
    struct dirent *de;
    uint64_t id;
    uint32_t rev;
    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (parse_seg_name(de->d_name, "log", &id) && id == 1 &&
            fstatat(db->dirfd, de->d_name, &st, 0) == 0 && st.st_size <= (off_t)FILEHDR_SIZE)
            first_empty = 1;
        else if (parse_seg_name(de->d_name, "log", &id) ||
                 parse_sealed_name(de->d_name, &id, &rev))
            found = 1;
    }
    closedir(d);
    if (!found && first_empty &&
        (cairn__io_unlink(db->io, "create.unlink", db->dirfd, "0000000000000001.log", NULL) !=
             CAIRN_OK ||
         cairn__io_fsync(db->io, "create.dirsync", db->dirfd, ".", NULL) != CAIRN_OK))
        found = 1; /* could not clear it: refuse rather than build on it */
    return found;
}

/* Remove files the manifest does not name. The .log of an entry already
 * SEALED (a crash after the seal's manifest swap) goes only in the second
 * pass, once its .seg has been validated: until then it may be the only
 * good copy. */
/* A file a compaction writes: <16 hex>-<8 hex>.seg, or its .tmp. */
static int compaction_name(const char *n)
{
    char base[32];
    uint64_t id;
    uint32_t rev;
    size_t len = strlen(n);
    if (len == 33 && strcmp(n + 29, ".tmp") == 0) {
        memcpy(base, n, 29);
        base[29] = 0;
        n = base;
    }
    return parse_sealed_name(n, &id, &rev) && rev != 0;
}

/* Is n a derived file's name (seqfile.h)? Its kind and seq if so. */
static int derived_kind(const char *n, uint64_t *seq, uint8_t *kind)
{
    for (size_t k = 0; k < SEQFILE_KINDS; k++)
        if (cairn__seqfile_parse(cairn__seqfile_kinds[k], n, seq)) {
            *kind = cairn__seqfile_kinds[k]->code;
            return 1;
        }
    return 0;
}

static int remove_orphans(cairn_db *db, const manifest *m, int sealed_logs, cairn__err *e)
{
    int rc = CAIRN_OK, removed = 0;
    /* A compaction in another process writes its files outside any turn,
     * and swaps them in later: leave them to it (or to the next open).
     * Held while listing, the guard keeps one from starting meanwhile. */
    int guarded = cairn__compaction_guard(db, 1), compacting = !guarded;
    DIR *d = cairn__io_opendir(db->dirfd);
    struct dirent *de;

    if (d == NULL) {
        if (guarded)
            (void)cairn__compaction_guard(db, 0);
        return cairn__fail(e, CAIRN_EIO, "read directory %s: %s", db->path, strerror(errno));
    }
    while ((de = readdir(d)) != NULL && rc == CAIRN_OK) {
        const char *n = de->d_name;
        const manifest_entry *x;
        uint64_t id;
        uint32_t rev;
        uint8_t kind;
        int orphan = 0;
        if (compacting && compaction_name(n))
            continue;
        if (cairn__temp_name(n)) /* this writer's lock: nobody is writing it, */
            /* but for what a live process puts in place outside its turn */
            orphan = !sealed_logs && !cairn__seqfile_temp_in_use(db->dirfd, n);
        else if (derived_kind(n, &id, &kind))
            /* renamed in by a write a crash cut short before the MANIFEST
             * listed it: never read */
            orphan = !sealed_logs && cairn__manifest_file(m, kind, id) == NULL;
        else if (parse_seg_name(n, "log", &id))
            orphan = (x = find_entry(m, id)) == NULL ? !sealed_logs
                                                     : x->kind == SEG_SEALED && sealed_logs;
        else if (parse_sealed_name(n, &id, &rev))
            /* also the file a compaction replaced (another rev) */
            orphan = !sealed_logs && ((x = find_entry(m, id)) == NULL ||
                                      x->kind != SEG_SEALED || x->rev != rev);
        if (orphan) {
            rc = cairn__io_unlink(db->io, "recover.unlink", db->dirfd, n, e);
            removed = 1;
        }
    }
    closedir(d);
    if (guarded)
        (void)cairn__compaction_guard(db, 0);
    if (rc == CAIRN_OK && removed)
        rc = cairn__io_fsync(db->io, "recover.dirsync", db->dirfd, ".", e);
    return rc;
}

/* A CLOSED segment with fewer valid records than its entry lists, and
 * nothing valid after them, lost an unsynced tail to a power loss (a
 * none/batch roll does not fsync; format-spec/segment.md): correct its
 * entry so it can be sealed. The lost numbers stay a gap, never reused.
 * Damage with valid records after it is left alone: reported, not sealed. */
static int recover_closed(cairn_db *db, view *v, cairn__err *e)
{
    int dirty = 0;

    for (size_t i = 0; i < v->m.n; i++) {
        manifest_entry *x = &v->m.e[i];
        seg_ref *s = v->segs[i];
        if (x->kind != SEG_CLOSED || s->sealed || s->log.n >= x->count || s->damaged_at != 0)
            continue;
        x->count = s->log.n;
        x->last_seq = x->base_seq + s->log.n - 1;
        x->first_ts = s->log.n ? s->log.ts[0] : 0;
        x->last_ts = s->log.n ? s->log.ts[s->log.n - 1] : 0;
        db->torn_bytes += s->log_file_size > s->log.end ? s->log_file_size - s->log.end : 0;
        dirty = 1;
    }
    if (!dirty)
        return CAIRN_OK;
    v->m.generation++;
    return cairn__db_manifest_write(db, &v->m, e);
}

/* The MANIFEST knows every record up to synced_seq was durable. Records of
 * that range the segments no longer hold are lost: whole records cut from
 * the end of the active segment (a cut at a record boundary leaves nothing
 * a scan could see), or from a closed one that an earlier writer fsynced
 * (a torn unsynced closed segment past synced_seq is an ordinary crash,
 * recover_closed's business). Records after damage are not lost: they are
 * set aside (check_tail). Their numbers were handed out: a writer retires
 * them (the active: a roll past them in cairn_open; a closed one: its
 * shortened entry leaves the gap) and counts them in the MANIFEST. */
static void note_lost(cairn_db *db, view *v)
{
    uint64_t synced = v->m.synced_seq, count = 0;

    for (size_t i = 0; i < v->m.n; i++) {
        const manifest_entry *x = &v->m.e[i];
        const seg_ref *s = v->segs[i];
        uint64_t from, to;
        if (s->sealed)
            continue;
        from = s->log.base_seq + s->log.n;
        if (x->kind == SEG_CLOSED) {
            if (s->log.n >= x->count || s->damaged_at != 0)
                continue;
            to = x->last_seq;
        } else {
            /* past damage the numbers up to the last valid record after it
             * are set aside, not lost */
            if (s->damaged_at != 0 && s->damaged_max_seq + 1 > from)
                from = s->damaged_max_seq + 1;
            if (db->seq_floor > from)
                from = db->seq_floor;
            to = synced;
        }
        if (to > synced)
            to = synced;
        if (from > to)
            continue;
        if (db->lost_first == 0 || from < db->lost_first)
            db->lost_first = from;
        if (to > db->lost_last)
            db->lost_last = to;
        count += to - from + 1;
        if (x->kind == SEG_ACTIVE && !db->read_only && to + 1 > db->seq_floor)
            db->seq_floor = to + 1;
    }
    /* Written by the MANIFEST that retires them (recover_closed's, or the
     * roll's in cairn_open: both copy this view's). */
    if (!db->read_only)
        v->m.lost_total += count;
}

static uint64_t random_salt(void)
{
    uint64_t s = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &s, sizeof s) != (ssize_t)sizeof s)
            s = 0;
        close(fd);
    }
    /* Without /dev/urandom, time and address bits still differ per segment. */
    s ^= (uint64_t)cairn__now_ms() * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)&s;
    return s ? s : 1;
}

uint64_t cairn__random_salt(void)
{
    return random_salt();
}

/* 128 random bits naming the store: derived files carry it, so a file of
 * another store copied in is never taken for one of this store's. Without
 * /dev/urandom the halves still differ (a counter) and so do two stores
 * made by one process in one millisecond. */
void cairn__db_store_id(cairn_db *db, uint8_t *id)
{
    view *v = cairn__view_acquire(db);
    memcpy(id, v->m.store_id, MAN_STORE_ID_LEN);
    cairn__view_release(db, v);
}

void cairn__store_id_new(uint8_t *id)
{
    static _Atomic uint64_t made;
    uint64_t n = atomic_fetch_add(&made, 1) + 1, a, b;
    a = random_salt() ^ (uint64_t)getpid() << 32 ^ n;
    b = random_salt() ^ n * 0x9E3779B97F4A7C15ull;
    put_le64(id, a);
    put_le64(id + 8, b ? b : 1);
}

/* A store whose MANIFEST is of version 1 has no id: the first writer gives
 * it one (rewriting the MANIFEST in the newest version). */
static int give_store_id(cairn_db *db, view *v, cairn__err *e)
{
    if (!cairn__store_id_is_zero(v->m.store_id))
        return CAIRN_OK;
    cairn__store_id_new(v->m.store_id);
    v->m.generation++;
    return cairn__db_manifest_write(db, &v->m, e);
}

static int create_store(cairn_db *db, manifest *m, cairn__err *e)
{
    logseg seg;
    manifest_entry x;
    int rc;

    if (has_segments(db))
        return cairn__fail(e, CAIRN_ECORRUPT,
                           "%s has segment files but no MANIFEST; refusing to start over",
                           db->path);
    rc = cairn__logseg_create(db->io, db->dirfd, &seg, 1, random_salt(), 1, cairn__now_ms(), e);
    if (rc != CAIRN_OK)
        return rc;
    cairn__logseg_free(db->io, db->a, &seg);
    memset(m, 0, sizeof *m);
    memset(&x, 0, sizeof x);
    x.id = 1;
    x.kind = SEG_ACTIVE;
    x.base_seq = 1;
    m->generation = 1;
    m->next_id = 2;
    m->segment_size = db->segment_size ? db->segment_size : DEFAULT_SEGMENT_SIZE;
    m->batch_ms = db->batch_ms ? db->batch_ms : DEFAULT_BATCH_MS;
    m->durability = (uint8_t)(db->durability == CAIRN_DURABILITY_STORED ? CAIRN_DURABILITY_BATCH
                                                                         : db->durability);
    m->max_memories = db->create_max_memories == 0 ? MAN_DEFAULT_MAX_MEMORIES
                      : db->create_max_memories == CAIRN_NO_LIMIT ? 0
                                                                : db->create_max_memories;
    m->retain = db->create_retain;
    m->label_rule = MAN_LABELS_FOLDED; /* a new store compares labels case-folded */
    m->reflect_threshold = MAN_DEFAULT_REFLECT;
    m->core_budget = MAN_DEFAULT_CORE_BUDGET;
    m->core_section_budget = MAN_DEFAULT_SECTION_BUDGET;
    cairn__store_id_new(m->store_id);
    m->e = &x;
    m->n = 1;
    rc = cairn__db_manifest_write(db, m, e);
    m->e = NULL;
    m->n = 0;
    if (rc != CAIRN_OK)
        return rc;
    return cairn__manifest_read(db->io, db->dirfd, db->a, m, e);
}

static int open_store(cairn_db *db, const cairn_options *o, cairn__err *e)
{
    manifest m;
    view *v = NULL;
    int rc;

    if (o->create && !o->read_only && mkdir(db->path, 0755) != 0 && errno != EEXIST)
        return cairn__fail(e, cairn__errno_status(errno), "mkdir %s: %s", db->path,
                           strerror(errno));
    db->dirfd = open(db->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (db->dirfd < 0) {
        if (errno == ENOENT)
            return cairn__fail(e, CAIRN_ENOTFOUND, "no store at %s", db->path);
        return cairn__fail(e, cairn__errno_status(errno), "open %s: %s", db->path,
                           strerror(errno));
    }
    /* A writer opens in a turn: recovery writes (orphans, temps, a torn
     * tail, a store id), and nobody else writes meanwhile. */
    if (!db->read_only) {
        if ((rc = cairn__lock_open(db, e)) != CAIRN_OK || (rc = cairn__turn_lock(db, e)) != CAIRN_OK)
            return rc;
        db->turn_held = 1;
        db->turn_users = 1;
    }
    {
        struct stat st;
        (void)manifest_changed(db, &st);
        manifest_noted(db, &st);
    }
    rc = cairn__manifest_read(db->io, db->dirfd, db->a, &m, e);
    if (rc == CAIRN_ENOTFOUND) {
        if (!o->create || db->read_only)
            return cairn__fail(e, CAIRN_ENOTFOUND, "no store at %s (no MANIFEST)", db->path);
        rc = create_store(db, &m, e);
    }
    if (rc != CAIRN_OK)
        return rc;
    if (!db->read_only)
        rc = remove_orphans(db, &m, 0, e);
    if (rc == CAIRN_OK && !db->read_only)
        (void)cairn__views_sweep(db, 0); /* views of processes gone (a killed --as-of) */
    /* Settings: stored unless this handle overrides them. */
    if (db->durability == CAIRN_DURABILITY_STORED)
        db->durability = (cairn_durability)m.durability;
    if (!db->segment_size)
        db->segment_size = m.segment_size;
    if (!db->batch_ms)
        db->batch_ms = m.batch_ms;
    if (rc == CAIRN_OK)
        rc = view_build(db, &m, NULL, &v, e);
    /* A reader can lose a race with the writer sealing (and unlinking) a .log
     * it was about to open: read the newer manifest and try again. */
    for (int attempt = 0; db->read_only && rc == CAIRN_ENOTFOUND && attempt < 20; attempt++) {
        cairn__manifest_free(db->a, &m);
        rc = cairn__manifest_read(db->io, db->dirfd, db->a, &m, e);
        if (rc != CAIRN_OK)
            return rc;
        rc = view_build(db, &m, NULL, &v, e);
    }
    if (rc == CAIRN_ENOTFOUND)
        rc = missing_segment(db, e);
    if (rc == CAIRN_OK && !db->read_only)
        rc = remove_orphans(db, &m, 1, e); /* every .seg validated by view_build */
    /* The id first: every MANIFEST this writer writes has one. */
    if (rc == CAIRN_OK && !db->read_only)
        rc = give_store_id(db, v, e);
    if (rc == CAIRN_OK)
        note_lost(db, v);
    if (rc == CAIRN_OK && !db->read_only)
        rc = recover_closed(db, v, e);
    if (rc != CAIRN_OK && v != NULL) {
        cairn__view_release(db, v);
        v = NULL;
    }
    if (rc == CAIRN_OK) {
        seg_ref *act = v->segs[m.n - 1];
        db->view = v;
        db->act = act; /* the handle's own reference: the view may go first */
        atomic_fetch_add(&act->refs, 1);
        db->next_seq = act->log.base_seq + act->log.n;
        db->durable_seq = db->next_seq - 1;
        db->written_seq = db->next_seq - 1;
        db->last_ts = act->log.n ? act->log.ts[act->log.n - 1]
                                 : (m.n > 1 ? m.e[m.n - 2].last_ts : INT64_MIN);
        db->wbuf_off = act->log.end;
        /* A writer's record index starts at one entry per 256 bytes of
         * segment, so a fresh segment rarely pays for doubling it; the
         * pages are touched only as records come (failure: it grows). */
        if (!db->read_only)
            (void)cairn__logseg_index_reserve(db->a, &act->log, (size_t)(db->segment_size / 256));
        for (size_t i = 0; i < m.n; i++)
            if (m.e[i].kind == SEG_CLOSED && !db->read_only)
                db->seal_pending = 1;
    }
    cairn__manifest_free(db->a, &m);
    return rc;
}

int cairn_open(cairn_db **out, const char *path, const cairn_options *opts, char *err,
               size_t errlen)
{
    cairn_options def = CAIRN_OPTIONS_INIT;
    const cairn_options *o = opts ? opts : &def;
    cairn__err e;
    cairn_db *db;
    int rc;

    e.msg[0] = '\0';
    *out = NULL;
    if (path == NULL || *path == '\0' || o->version < 1 || o->version > CAIRN_OPTIONS_VERSION ||
        o->durability < CAIRN_DURABILITY_STORED || o->durability > CAIRN_DURABILITY_FULL ||
        (o->segment_size && (o->segment_size < 4096 || o->segment_size > (1ull << 32)))) {
        rc = cairn__fail(&e, CAIRN_EINVAL, "invalid path or options");
        goto report;
    }
    if (o->version >= 5 && o->retain != NULL) {
        cairn_retention r;
        if (cairn_retain_parse(o->retain, &r) != CAIRN_OK) {
            rc = cairn__fail(&e, CAIRN_EINVAL, "invalid retention policy '%.64s' (all, live, "
                             "live:GRACE as live:7d, and events:30d or events:10GiB)",
                             o->retain);
            goto report;
        }
    }
    db = o->allocator ? o->allocator->malloc_fn(o->allocator->user, sizeof *db)
                      : malloc(sizeof *db);
    if (db == NULL) {
        rc = cairn__fail(&e, CAIRN_ENOMEM, "no memory for a handle");
        goto report;
    }
    memset(db, 0, sizeof *db);
    if (o->allocator) {
        db->a_copy = *o->allocator;
        db->a = &db->a_copy;
    }
    if (o->io == NULL) {
        db->io_copy = *cairn_io_default();
    } else if (o->version < 2) { /* a table of before `reserve` is shorter */
        memcpy(&db->io_copy, o->io, offsetof(cairn_io, reserve));
        db->io_copy.reserve = NULL;
    } else {
        db->io_copy = *o->io;
    }
    db->io = &db->io_copy;
    db->caller_io = o->io != NULL;
    db->read_only = o->read_only;
    db->background = o->background && !o->read_only;
    db->may_thread = o->background;
    db->busy_ms = o->version >= 3 && o->busy_timeout_ms ? o->busy_timeout_ms
                                                        : CAIRN_BUSY_TIMEOUT_DEFAULT;
    db->durability = o->durability;
    db->batch_ms = o->batch_ms;
    db->segment_size = o->segment_size;
    db->create_max_memories = o->version >= 4 ? o->max_memories : 0;
    if (o->version >= 5 && o->retain != NULL) /* checked above */
        (void)cairn_retain_parse(o->retain, &db->create_retain);
    db->dirfd = db->lockfd = -1;
    db->inofd = -2;
    pthread_mutex_init(&db->mu, NULL);
    pthread_mutex_init(&db->seal_mu, NULL);
    pthread_mutex_init(&db->err_mu, NULL);
    cairn__errbuf_drop(db); /* a handle that lived here before */
    cairn__waitword_init(&db->synced);
    pthread_cond_init(&db->sync_cv, NULL);
    pthread_cond_init(&db->append_cv, NULL);
    pthread_cond_init(&db->bg_cv, NULL);
    pthread_cond_init(&db->seal_cv, NULL);
    pthread_cond_init(&db->turn_cv, NULL);
    db->path = cairn__malloc(db->a, strlen(path) + 1);
    if (db->path == NULL) {
        rc = cairn__fail(&e, CAIRN_ENOMEM, "no memory");
        cairn_close(db);
        goto report;
    }
    strcpy(db->path, path);
    rc = open_store(db, o, &e);
    db->last_flush_ms = cairn__now_ms();
    if (rc == CAIRN_OK && db->seq_floor > db->next_seq) {
        pthread_mutex_lock(&db->mu);
        rc = retire_damage(db, &e);
        pthread_mutex_unlock(&db->mu);
    }
    /* Space a writer reserved past the end and did not give back (it was
     * killed): given back now, in the open's turn. */
    if (rc == CAIRN_OK && !db->read_only) {
        struct stat st;
        pthread_mutex_lock(&db->mu);
        if (fstat(db->act->log.fd, &st) == 0 &&
            (uint64_t)st.st_blocks * 512 > (uint64_t)st.st_size + (1u << 16))
            cairn__trim_reserved(db);
        pthread_mutex_unlock(&db->mu);
    }
    /* Derived files folded over the lost records describe what the log no
     * longer holds (their binding refuses them too): remove them now. */
    if (rc == CAIRN_OK && !db->read_only && db->lost_first != 0) {
        cairn__seqfile_remove_from(db, &cairn__seqfile_memindex, db->lost_first);
        cairn__seqfile_remove_from(db, &cairn__seqfile_graph, db->lost_first);
        cairn__seqfile_remove_from(db, &cairn__seqfile_graphgen, db->lost_first);
    }
    if (rc == CAIRN_OK && !db->read_only)
        cairn__seqfile_settle(db);
    if (rc == CAIRN_OK && db->background)
        rc = cairn__bg_start(db);
    /* Closed segments left by an earlier handle: seal them now. A failure
     * here loses nothing (the .log stays live) and is reported by the next
     * cairn_seal() or roll, so it does not fail the open. */
    if (rc == CAIRN_OK && !db->read_only && !db->background && db->seal_pending)
        cairn__seal_pending(db);
    if (!db->read_only) { /* the open's turn ends */
        pthread_mutex_lock(&db->mu);
        cairn__turn_put(db);
        pthread_mutex_unlock(&db->mu);
    }
    if (rc != CAIRN_OK) {
        db->dead = rc; /* nothing to flush */
        cairn_close(db);
        goto report;
    }
    *out = db;
    return CAIRN_OK;
report:
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", e.msg[0] ? e.msg : cairn_strerror(rc));
    /* and where cairn_errmsg(NULL) reads it: no handle came of the call */
    snprintf(cairn__errbuf(NULL), CAIRN_ERRMSG_MAX, "%s", e.msg[0] ? e.msg : cairn_strerror(rc));
    return rc;
}

int cairn_close(cairn_db *db)
{
    int rc = CAIRN_OK;
    const cairn_allocator *a;
    cairn_allocator ac;

    if (db == NULL)
        return CAIRN_OK;
    cairn__bg_stop(db);
    pthread_mutex_lock(&db->mu);
    if (db->dead && db->view != NULL) /* records acknowledged before it may be lost */
        rc = db->dead_untold ? db->dead : CAIRN_EDEAD; /* the cause, if nobody was told */
    if (!db->read_only && !db->dead && db->act != NULL) {
        cairn__err e;
        /* Best effort: a failed roll leaves the segment active (the next
         * open scans it, as before); one that kills the handle is told by
         * the flush below. */
        (void)cairn__roll_at_close(db);
        rc = cairn__flush_locked(db);
        if (rc == CAIRN_OK)
            rc = cairn__sync_closed(db);
        if (rc == CAIRN_OK && db->durable_seq < db->written_seq) {
            rc = cairn__io_fdatasync(db->io, "close.fdatasync", db->act->log.fd,
                                     db->act->log.name, &e);
            if (rc != CAIRN_OK)
                cairn__db_fail(db, rc, &e);
        }
        /* Give back the space this handle reserved past the end: in a
         * turn, where the end is the log's (best effort). */
        if (rc == CAIRN_OK && db->act_reserve_tried && db->wbuf_len == 0 &&
            cairn__turn_get(db) == CAIRN_OK) {
            cairn__trim_reserved(db);
            cairn__turn_put(db);
        }
    }
    if (db->closed_unsynced != NULL) { /* dead handle: just drop it */
        cairn__seg_release(db, db->closed_unsynced);
        db->closed_unsynced = NULL;
    }
    pthread_mutex_unlock(&db->mu);
    /* Leave no segment waiting for a seal the background thread had no time
     * to do; a failure here loses nothing (the next open seals it). */
    if (rc == CAIRN_OK && !db->read_only && !db->dead && db->view != NULL && db->seal_pending)
        cairn__seal_pending(db);
    /* `none` syncs closed segments only by sealing them: any left unsealed
     * (a failed seal) are synced here, as close promises. */
    if (rc == CAIRN_OK && !db->read_only && !db->dead && db->view != NULL &&
        db->durability == CAIRN_DURABILITY_NONE) {
        pthread_mutex_lock(&db->mu);
        rc = cairn__sync_unsealed(db);
        pthread_mutex_unlock(&db->mu);
    }
    if (db->act != NULL)
        cairn__seg_release(db, db->act);
    if (db->view != NULL)
        cairn__view_release(db, db->view);
    if (db->lockfd >= 0)
        close(db->lockfd); /* releases the flock; waiters see the close */
    if (db->inofd >= 0)
        close(db->inofd);
    if (db->dirfd >= 0)
        close(db->dirfd);
    pthread_mutex_destroy(&db->mu);
    pthread_mutex_destroy(&db->seal_mu);
    pthread_mutex_destroy(&db->err_mu);
    cairn__errbuf_drop(db);
    pthread_cond_destroy(&db->sync_cv);
    cairn__waitword_destroy(&db->synced);
    pthread_cond_destroy(&db->append_cv);
    pthread_cond_destroy(&db->bg_cv);
    pthread_cond_destroy(&db->seal_cv);
    pthread_cond_destroy(&db->turn_cv);
    a = db->a;
    if (a) {
        ac = *a;
        a = &ac;
    }
    cairn__free(a, db->wbuf);
    cairn__free(a, db->path);
    cairn__free(a, db);
    return rc;
}

uint64_t cairn__handed_seq(cairn_db *db)
{
    seg_ref *act;
    uint64_t s;

    pthread_mutex_lock(&db->mu);
    act = db->view->segs[db->view->m.n - 1];
    /* Numbers retired past a loss or damage are the gap before the active
     * segment's base_seq: handed out too; so are those of records after
     * damage a reader sees (a writer sets them aside). */
    s = act->sealed ? act->s.last_seq : act->log.base_seq + act->log.n - 1;
    if (!act->sealed && act->damaged_at != 0 && act->damaged_max_seq > s)
        s = act->damaged_max_seq;
    pthread_mutex_unlock(&db->mu);
    return s;
}

/* ---- stats -------------------------------------------------------------- */

static uint64_t file_bytes(int dirfd, const char *name)
{
    struct stat st;
    return fstatat(dirfd, name, &st, 0) == 0 ? (uint64_t)st.st_size : 0;
}

int cairn_stats_get(cairn_db *db, cairn_stats *out)
{
    view *v;
    int rc = CAIRN_OK;

    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&db->mu);
    rc = db->dead ? cairn__flush_locked(db) : cairn__refresh(db);
    v = db->view;
    atomic_fetch_add(&v->refs, 1);
    for (size_t i = 0; i < v->m.n; i++) {
        const manifest_entry *x = &v->m.e[i];
        seg_ref *s = v->segs[i];
        uint64_t n = s->sealed ? cairn__sealed_span(&s->s) : s->log.n;
        if (out->first_seq == 0 && n > 0)
            out->first_seq = x->base_seq;
        if (n > 0)
            out->last_seq = x->base_seq + n - 1;
        out->records += s->sealed ? s->s.record_count : n;
        if (x->kind == SEG_SEALED) {
            out->segments_sealed++;
            out->sealed_raw_bytes += s->s.raw_bytes;
            out->sealed_bytes += s->map_len;
            out->log_bytes += s->s.raw_bytes;
            out->bytes_on_disk += s->map_len;
        } else {
            if (x->kind == SEG_ACTIVE)
                out->segments_active++;
            else
                out->segments_closed++;
            out->log_bytes += s->log.raw_bytes;
            out->bytes_on_disk += s->sealed ? 0 : file_bytes(db->dirfd, s->log.name);
        }
    }
    out->bytes_on_disk += file_bytes(db->dirfd, MANIFEST_NAME) + file_bytes(db->dirfd, LOCK_NAME);
    out->durability = db->durability;
    out->batch_ms = db->batch_ms;
    out->segment_size = db->segment_size;
    out->generation = v->m.generation;
    out->recovered_torn_bytes = db->torn_bytes;
    out->recovered_set_aside_bytes = db->set_aside_bytes;
    out->recovered_lost_first = db->lost_first;
    out->recovered_lost_last = db->lost_last;
    out->lost_total = v->m.lost_total;
    memcpy(out->store_id, v->m.store_id, sizeof out->store_id);
    pthread_mutex_unlock(&db->mu);
    cairn__view_release(db, v);
    return rc;
}
