/*
 * access.c - access statistics kept in the side file ACCESS instead of a
 * log record per recall; see access.h, format-spec/access.md (the file and
 * its protocol) and format-spec/memory.md (the fold form of memory.access).
 *
 * Appending. Every handle, also a read-only one, appends the entries of a
 * recall's hits in one write(2) on a descriptor opened with O_APPEND: the
 * kernel picks the position atomically, so appenders in many processes
 * never overwrite one another on a local file system. Nothing is fsynced:
 * these are statistics, and a crash may lose the last of them, never a
 * memory. A file that cannot be written (read-only file system, no
 * permission, a damaged header) makes the recall record nothing; the
 * recall itself never fails for it (cairn_mem_access_unrecorded counts).
 *
 * Reading. A memory's accessCount is its folded count (the log) plus the
 * entries of ACCESS for it; accessedAt the later of the two. A handle keeps
 * what it has read of the file (a table: memory seq -> count, last time)
 * and reads only what was appended since (fstat, pread); when the name
 * ACCESS points to another file (a writer replaced it) it starts over.
 *
 * Folding (writers). The writer replaces ACCESS by a fresh, empty file
 * (another random id) *before* it reads the old one to its end and appends
 * one memory.access record with the coalesced counts. So the file under the
 * name ACCESS never holds an entry a record has counted: a handle that
 * opened a memory index file (which hides the fold records it covers) needs
 * no fold point to know what is pending. Appenders take a shared flock on
 * the file for the instant of their write and check, once they hold it,
 * that the name still points to it; the writer takes the exclusive flock on
 * the old file after the rename, so that every append that got in before
 * the rename is read, and every later one goes to the new file. Appenders
 * never wait (LOCK_NB: a refusal means a writer is folding the file, which
 * is no longer under the name); the writer waits at most 200 ms for them.
 * The record still names the file and the bytes it folded (`file`,
 * `upto`): should the rename not survive a power loss while the record
 * does, a reader skips what the record counted.
 */
#include "access.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "accfile.h"
#include "io.h"
#include "memstate.h"
#include "store.h"

/* What the handle knows of the file under the name ACCESS. */
enum { ACC_NONE, ACC_OK, ACC_DAMAGED, ACC_NEWER };

#define READ_CHUNK (64u * 1024u)
#define FOLD_CHUNK 50000u /* memories per record: ~60 bytes each, far below 16 MiB */

typedef struct pend {
    uint64_t seq;   /* the memory's store record; 0: an empty slot */
    uint64_t count; /* entries for it */
    int64_t last;   /* the latest of their times */
} pend;

struct cairn__access {
    int fd;            /* the file as last opened, -1: none */
    int writable;      /* fd appends (O_RDWR | O_APPEND), else read-only */
    int state;         /* ACC_* */
    dev_t dev;         /* fd's file, to tell when the name moved on */
    ino_t ino;
    uint64_t file_id;  /* from its header (ACC_OK) */
    uint64_t from;     /* where its pending entries begin: the header's end,
                          or past what a fold record of it counted */
    uint64_t read_off; /* bytes of it scanned */
    pend *tab;         /* pending accesses by seq; cap a power of 2 */
    size_t cap, used;
    uint64_t entries;  /* pending entries read (those of lost memories too) */
    uint64_t damage;   /* bytes skipped and entries refused in this file */
    uint64_t unrecorded; /* accesses this handle could not write, since open */
    int64_t none_ns;   /* when a writer's fold last found no file (monotonic) */
};

/* A writer that found no ACCESS looks again before a fold at most this
 * often: a store per microsecond would otherwise pay a path lookup each
 * (about 6 % of a store). Its own recalls' file it knows at once. */
#define ACC_LOOK_NS 1000000

/* One fold at a time in the process: two handles of one store folding at
 * once would each replace the file and count the old one twice. Across
 * processes the writer's turn orders them. */
static pthread_mutex_t fold_mu = PTHREAD_MUTEX_INITIALIZER;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static size_t slot_of(uint64_t seq, size_t cap)
{
    return (size_t)((seq * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static const pend *pend_find(const cairn__access *a, uint64_t seq)
{
    if (a == NULL || a->cap == 0)
        return NULL;
    for (size_t i = slot_of(seq, a->cap);; i = (i + 1) & (a->cap - 1)) {
        if (a->tab[i].seq == seq)
            return &a->tab[i];
        if (a->tab[i].seq == 0)
            return NULL;
    }
}

static int pend_grow(cairn__access *a)
{
    size_t cap = a->cap ? a->cap * 2 : 64;
    pend *t = calloc(cap, sizeof *t);
    if (t == NULL)
        return CAIRN_ENOMEM;
    for (size_t i = 0; i < a->cap; i++) {
        size_t j;
        if (a->tab[i].seq == 0)
            continue;
        for (j = slot_of(a->tab[i].seq, cap); t[j].seq != 0; j = (j + 1) & (cap - 1))
            ;
        t[j] = a->tab[i];
    }
    free(a->tab);
    a->tab = t;
    a->cap = cap;
    return CAIRN_OK;
}

/* accfile_scan's callback: one good entry. */
static void pend_add(void *user, uint64_t seq, int64_t at, uint64_t off)
{
    cairn__access *a = user;
    size_t i;
    (void)off;
    a->entries++;
    if ((a->used + 1) * 2 > a->cap && pend_grow(a) != CAIRN_OK)
        return; /* no memory: this access goes uncounted here, not in the file */
    for (i = slot_of(seq, a->cap); a->tab[i].seq != 0 && a->tab[i].seq != seq;
         i = (i + 1) & (a->cap - 1))
        ;
    if (a->tab[i].seq == 0) {
        a->tab[i].seq = seq;
        a->used++;
    }
    a->tab[i].count++;
    if (at > a->tab[i].last)
        a->tab[i].last = at;
}

static void pend_clear(cairn__access *a)
{
    if (a->cap)
        memset(a->tab, 0, a->cap * sizeof *a->tab);
    a->used = 0;
    a->entries = 0;
    a->damage = 0;
}

/* Forget the file: closed, nothing pending. */
static void acc_reset(cairn_mem *m, cairn__access *a)
{
    if (a->fd >= 0)
        cairn__io_close(m->db->io, "access.close", a->fd);
    a->fd = -1;
    a->writable = 0;
    a->state = ACC_NONE;
    a->file_id = 0;
    a->from = a->read_off = 0;
    pend_clear(a);
}

static cairn__access *acc_get(cairn_mem *m)
{
    if (m->acc == NULL && (m->acc = calloc(1, sizeof *m->acc)) != NULL)
        m->acc->fd = -1;
    return m->acc;
}

_Static_assert(ACC_STORE_ID_LEN == MAN_STORE_ID_LEN, "the header holds the MANIFEST's store id");

/* Open the file under the name (lst: what lstat found there) and read its
 * header. Any file that opens is kept open with its identity, also a
 * damaged one (so that it is not opened again at every call). Something
 * that is no regular file (a planted symlink, a FIFO) is not opened: it is
 * damaged, for a writer's fold to replace. One that does not open leaves
 * fd -1 and nothing known. */
static void acc_open(cairn_mem *m, cairn__access *a, const struct stat *lst)
{
    const cairn_io *io = m->db->io;
    uint8_t hdr[ACC_HDR_SIZE], sid[ACC_STORE_ID_LEN];
    accfile_hdr h;
    struct stat st;
    size_t got = 0;
    int fd, rc;

    acc_reset(m, a);
    if (!S_ISREG(lst->st_mode)) {
        a->state = ACC_DAMAGED;
        a->dev = lst->st_dev;
        a->ino = lst->st_ino;
        return;
    }
    /* O_NONBLOCK: should a FIFO take the name meanwhile, the open must not hang */
    rc = cairn__io_open(io, "access.open", m->db->dirfd, ACC_NAME, O_RDWR | O_APPEND | O_NONBLOCK,
                        0, &fd, NULL);
    a->writable = rc == CAIRN_OK;
    if (rc != CAIRN_OK && /* read-only file system, no write permission: read it still */
        cairn__io_open(io, "access.open", m->db->dirfd, ACC_NAME, O_RDONLY | O_NONBLOCK, 0, &fd,
                       NULL) != CAIRN_OK)
        return;
    a->fd = fd;
    if (fstat(fd, &st) != 0) {
        acc_reset(m, a);
        return;
    }
    a->dev = st.st_dev;
    a->ino = st.st_ino;
    a->state = ACC_DAMAGED;
    if (!S_ISREG(st.st_mode) ||
        cairn__io_read(io, "access.read", fd, hdr, sizeof hdr, 0, &got, ACC_NAME, NULL) != CAIRN_OK)
        return;
    rc = cairn__accfile_hdr_decode(hdr, got, &h, NULL);
    if (rc == CAIRN_EVERSION) {
        a->state = ACC_NEWER; /* a later cairn's file: left alone */
        return;
    }
    cairn__db_store_id(m->db, sid);
    if (rc != CAIRN_OK ||
        (!cairn__store_id_is_zero(sid) && memcmp(sid, h.store_id, sizeof sid) != 0))
        return; /* damaged, or another store's: the next fold replaces it */
    a->state = ACC_OK;
    a->file_id = h.file_id;
    a->from = ACC_HDR_SIZE;
    if (m->acc_fold_file == h.file_id && m->acc_fold_upto > a->from)
        a->from = m->acc_fold_upto; /* counted by a record already */
    a->read_off = a->from;
}

/* Scan what was appended past read_off. */
static void acc_scan_new(cairn_mem *m, cairn__access *a)
{
    uint8_t *buf;
    struct stat st;

    if (a->state != ACC_OK || fstat(a->fd, &st) != 0 || (uint64_t)st.st_size < a->read_off + ACC_ENTRY_SIZE)
        return;
    if ((buf = malloc(READ_CHUNK)) == NULL)
        return;
    while ((uint64_t)st.st_size >= a->read_off + ACC_ENTRY_SIZE) {
        uint64_t left = (uint64_t)st.st_size - a->read_off;
        size_t want = left < READ_CHUNK ? (size_t)left : READ_CHUNK, got = 0;
        accfile_scan s;
        if (cairn__io_read(m->db->io, "access.read", a->fd, buf, want, a->read_off, &got, ACC_NAME,
                           NULL) != CAIRN_OK)
            break;
        cairn__accfile_scan(buf, got, a->read_off, a->file_id, pend_add, a, &s);
        a->damage += s.skipped + s.bad_entries;
        a->read_off += s.consumed;
        if (s.consumed == 0 || got < want)
            break; /* a partial entry at the end, or the file shrank */
    }
    free(buf);
}

void cairn__access_refresh(cairn_mem *m)
{
    cairn__access *a = acc_get(m);
    struct stat st;

    if (a == NULL)
        return;
    if (fstatat(m->db->dirfd, ACC_NAME, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        acc_reset(m, a); /* none (yet), or gone: nothing pending */
        return;
    }
    if (a->fd < 0 || st.st_dev != a->dev || st.st_ino != a->ino) {
        acc_open(m, a, &st);
    } else if (a->state == ACC_OK && m->acc_fold_file == a->file_id &&
               m->acc_fold_upto > a->from) {
        /* A record counted part of this very file (its replacement was
         * lost): read it again past what was counted. */
        pend_clear(a);
        a->from = a->read_off = m->acc_fold_upto;
    }
    acc_scan_new(m, a);
}

/* A fresh file with a new id under the name: linked if none is there
 * (replace 0: if another process made one meanwhile, that one stays), or
 * renamed over the one there (replace 1). Written as a temp first, so that
 * the name never shows a file without its whole header. */
static int make_file(cairn_mem *m, int replace)
{
    const cairn_io *io = m->db->io;
    uint8_t hdr[ACC_HDR_SIZE], sid[ACC_STORE_ID_LEN];
    char tmp[64];
    int fd = -1, rc;

    snprintf(tmp, sizeof tmp, "%s.%016" PRIx64 ".tmp", ACC_NAME, cairn__random_salt());
    cairn__db_store_id(m->db, sid);
    cairn__accfile_hdr_encode(hdr, cairn__random_salt(), sid);
    rc = cairn__io_open(io, "access.create", m->db->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0644,
                        &fd, NULL);
    if (rc != CAIRN_OK)
        return rc;
    rc = cairn__io_write(io, "access.create", fd, hdr, sizeof hdr, 0, tmp, NULL);
    cairn__io_close(io, "access.create", fd);
    if (rc == CAIRN_OK && replace)
        rc = cairn__io_rename(io, "access.rename", m->db->dirfd, tmp, ACC_NAME, NULL);
    else if (rc == CAIRN_OK && linkat(m->db->dirfd, tmp, m->db->dirfd, ACC_NAME, 0) != 0 &&
             errno != EEXIST)
        rc = cairn__errno_status(errno);
    if (rc != CAIRN_OK || !replace)
        (void)cairn__io_unlink(io, "access.unlink", m->db->dirfd, tmp, NULL);
    return rc;
}

static int same_file(cairn_mem *m, const cairn__access *a)
{
    struct stat st;
    return fstatat(m->db->dirfd, ACC_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == a->dev &&
           st.st_ino == a->ino;
}

int cairn__access_record(cairn_mem *m, const uint64_t *seqs, size_t n, int64_t at)
{
    cairn__access *a = acc_get(m);
    uint8_t *buf;
    size_t len = n * ACC_ENTRY_SIZE;
    int done = 0;

    if (n == 0)
        return 1;
    if (a == NULL)
        return 0;
    if (n > SIZE_MAX / ACC_ENTRY_SIZE || (buf = malloc(len)) == NULL) {
        a->unrecorded += n;
        return 0;
    }
    /* A few tries: the name may move on (a writer's fold) between looking
     * and writing; the file may be missing and made here first. */
    for (int attempt = 0; attempt < 4 && !done; attempt++) {
        struct stat st;
        ssize_t w;
        int locked;
        if (fstatat(m->db->dirfd, ACC_NAME, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT || make_file(m, 0) != CAIRN_OK)
                break;
            continue;
        }
        if (a->fd < 0 || st.st_dev != a->dev || st.st_ino != a->ino)
            acc_open(m, a, &st);
        if (a->state != ACC_OK || !a->writable)
            break;
        for (size_t i = 0; i < n; i++)
            cairn__accfile_entry_encode(buf + i * ACC_ENTRY_SIZE, a->file_id, seqs[i], at);
        locked = flock(a->fd, LOCK_SH | LOCK_NB) == 0;
        if (!locked && errno == EWOULDBLOCK)
            continue; /* a writer is folding this file: it is no longer under the name */
        if (!same_file(m, a)) {
            if (locked)
                flock(a->fd, LOCK_UN);
            continue;
        }
        do
            w = write(a->fd, buf, len); /* not through the I/O table: it has no O_APPEND write */
        while (w < 0 && errno == EINTR);
        if (locked)
            flock(a->fd, LOCK_UN);
        done = w == (ssize_t)len; /* a short write leaves bytes readers skip */
        break;
    }
    free(buf);
    if (!done)
        a->unrecorded += n;
    return done;
}

uint64_t cairn__access_count(const cairn_mem *m, const ment *x)
{
    const pend *p = pend_find(m->acc, x->seq);
    return x->access_count + (p ? p->count : 0);
}

int64_t cairn__access_last(const cairn_mem *m, const ment *x)
{
    const pend *p = pend_find(m->acc, x->seq);
    return p != NULL && p->last > x->accessed ? p->last : x->accessed;
}

int cairn__access_fold_due(cairn_mem *m)
{
    cairn__access *a;
    cairn__access_refresh(m);
    a = m->acc;
    return a != NULL && ((a->state == ACC_OK && a->entries * ACC_ENTRY_SIZE >= ACC_FOLD_AT_CLOSE) ||
                         a->state == ACC_DAMAGED);
}

uint64_t cairn__access_unrecorded(const cairn_mem *m)
{
    return m->acc != NULL ? m->acc->unrecorded : 0;
}

void cairn__access_free(cairn_mem *m)
{
    if (m->acc == NULL)
        return;
    acc_reset(m, m->acc);
    free(m->acc->tab);
    free(m->acc);
    m->acc = NULL;
}

/* The exclusive lock on the old file, waiting at most 200 ms for the
 * appends in flight. 1: held. */
static int lock_ex(int fd)
{
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 200; i++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return 1;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return 0;
        nanosleep(&ms, NULL);
    }
    return 0;
}

/* Append the pending counts of live memories as fold records (one, unless
 * more than FOLD_CHUNK memories: then one commit of several). */
static int write_fold(cairn_mem *m, const cairn__access *a)
{
    size_t n = 0, nrec, k = 0;
    char (*ids)[CAIRN_MEM_ID_MAX + 1] = NULL;
    const char **idp = NULL, **nss = NULL;
    uint64_t *counts = NULL;
    int64_t *lasts = NULL;
    memrec *rs = NULL;
    const memrec **rps = NULL;
    int rc = CAIRN_OK;

    for (size_t i = 0; i < a->cap; i++) {
        const ment *x = a->tab[i].seq ? cairn__mem_find_seq(m, a->tab[i].seq) : NULL;
        n += x != NULL && x->live; /* a memory deleted since: nothing to count */
    }
    if (n == 0)
        return CAIRN_OK;
    nrec = (n + FOLD_CHUNK - 1) / FOLD_CHUNK;
    ids = malloc(n * sizeof *ids);
    idp = malloc(n * sizeof *idp);
    counts = malloc(n * sizeof *counts);
    lasts = malloc(n * sizeof *lasts);
    rs = calloc(nrec, sizeof *rs);
    rps = malloc(nrec * sizeof *rps);
    nss = malloc(nrec * sizeof *nss);
    if (ids == NULL || idp == NULL || counts == NULL || lasts == NULL || rs == NULL || rps == NULL ||
        nss == NULL) {
        rc = cairn__mem_fail(m, CAIRN_ENOMEM, "no memory to fold access statistics");
        goto out;
    }
    for (size_t i = 0; i < a->cap && k < n; i++) {
        const ment *x = a->tab[i].seq ? cairn__mem_find_seq(m, a->tab[i].seq) : NULL;
        if (x == NULL || !x->live)
            continue;
        strcpy(ids[k], x->id); /* copies: applying records may move entries */
        idp[k] = ids[k];
        counts[k] = a->tab[i].count;
        lasts[k] = a->tab[i].last;
        k++;
    }
    for (size_t r = 0; r < nrec; r++) {
        size_t lo = r * FOLD_CHUNK, hi = lo + FOLD_CHUNK < k ? lo + FOLD_CHUNK : k;
        rs[r].type = CAIRN_REC_MEMORY_ACCESS;
        rs[r].ids = idp + lo;
        rs[r].counts = counts + lo;
        rs[r].lasts = lasts + lo;
        rs[r].n_ids = hi - lo;
        for (size_t i = lo; i < hi; i++)
            if (lasts[i] > rs[r].accessed_at)
                rs[r].accessed_at = lasts[i];
        rs[r].acc_file = a->file_id;
        rs[r].acc_upto = a->read_off;
        rps[r] = &rs[r];
        nss[r] = ""; /* as every access record: it may name memories of several */
    }
    rc = cairn__mem_write_commit(m, nss, rps, nrec);
out:
    free(ids);
    free(idp);
    free(counts);
    free(lasts);
    free(rs);
    free(rps);
    free(nss);
    return rc;
}

int cairn__mem_access_fold(cairn_mem *m)
{
    cairn__access *a;
    int rc = CAIRN_OK;

    if (m->db->read_only)
        return CAIRN_OK;
    pthread_mutex_lock(&fold_mu);
    a = m->acc;
    if (a != NULL && a->fd < 0 && a->state == ACC_NONE && a->none_ns != 0 &&
        now_ns() - a->none_ns < ACC_LOOK_NS)
        goto out; /* none a moment ago */
    cairn__access_refresh(m);
    a = m->acc;
    if (a != NULL)
        a->none_ns = a->fd < 0 && a->state == ACC_NONE ? now_ns() : 0;
    if (a == NULL || a->state == ACC_NONE || a->state == ACC_NEWER ||
        (a->state == ACC_OK && a->entries == 0 && a->damage == 0))
        goto out; /* nothing to fold, or not ours to replace */
    /* The fold counts the memories of the state: those held only as keys
     * (a store's turn, memkeys.h) are folded into it first. */
    if ((rc = cairn__mem_unkey(m)) != CAIRN_OK)
        goto out;
    /* First the fresh file under the name: every append from now on goes
     * there. If it cannot be made, the entries stay pending. */
    if (make_file(m, 1) != CAIRN_OK)
        goto out;
    if (a->state == ACC_OK) {
        int locked = lock_ex(a->fd); /* the appends that got in before the rename */
        acc_scan_new(m, a);
        if (locked)
            flock(a->fd, LOCK_UN);
        rc = write_fold(m, a);
    }
    acc_reset(m, a); /* the next look opens the fresh file */
out:
    pthread_mutex_unlock(&fold_mu);
    return rc;
}

/* ---- verify ------------------------------------------------------------- */

/* Where the good entries leave a gap: bytes no good entry covers. */
typedef struct gaps {
    uint64_t expect;  /* where the next entry would start with no gap */
    uint64_t first;   /* the first byte of the first gap (0: none yet) */
} gaps;

static void note_gap(void *user, uint64_t seq, int64_t at, uint64_t off)
{
    gaps *g = user;
    (void)seq;
    (void)at;
    if (off != g->expect && g->first == 0)
        g->first = g->expect;
    g->expect = off + ACC_ENTRY_SIZE;
}

static void acc_problem(cairn_verify_fn fn, void *user, uint64_t *problems, uint64_t off,
                        int code, const char *msg)
{
    (*problems)++;
    if (fn != NULL)
        fn(user, ACC_NAME, off, code, msg);
}

int cairn_mem_verify_access(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems_out,
                            int *checked_out)
{
    uint8_t hdr[ACC_HDR_SIZE], sid[ACC_STORE_ID_LEN], *buf = NULL;
    uint64_t off = ACC_HDR_SIZE, bad = 0, size;
    accfile_hdr h;
    struct stat st;
    cairn__err e;
    gaps g = {ACC_HDR_SIZE, 0};
    size_t got = 0;
    int fd = -1, rc;

    *problems_out = 0;
    if (checked_out != NULL)
        *checked_out = 0;
    if (fstatat(db->dirfd, ACC_NAME, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? CAIRN_OK : cairn__db_failf(db, CAIRN_EIO, "stat %s/%s: %s",
                                                             db->path, ACC_NAME, strerror(errno));
    if (checked_out != NULL)
        *checked_out = 1;
    if (!S_ISREG(st.st_mode)) {
        acc_problem(fn, user, problems_out, 0, CAIRN_ECORRUPT,
                    "ACCESS is not a regular file (the next writer's fold replaces it)");
        return CAIRN_OK;
    }
    rc = cairn__io_open(db->io, "access.open", db->dirfd, ACC_NAME, O_RDONLY | O_NONBLOCK, 0, &fd,
                        &e);
    if (rc == CAIRN_ENOTFOUND) { /* removed since: as if there were none */
        if (checked_out != NULL)
            *checked_out = 0;
        return CAIRN_OK;
    }
    if (rc == CAIRN_ECORRUPT) { /* a symlink put in its place since (O_NOFOLLOW) */
        acc_problem(fn, user, problems_out, 0, CAIRN_ECORRUPT,
                    "ACCESS is not a regular file (the next writer's fold replaces it)");
        return CAIRN_OK;
    }
    if (rc == CAIRN_OK && fstat(fd, &st) != 0)
        rc = cairn__fail(&e, CAIRN_EIO, "fstat %s: %s", ACC_NAME, strerror(errno));
    if (rc == CAIRN_OK)
        rc = cairn__io_read(db->io, "access.read", fd, hdr, sizeof hdr, 0, &got, ACC_NAME, &e);
    if (rc != CAIRN_OK)
        goto out;
    size = (uint64_t)st.st_size;
    rc = cairn__accfile_hdr_decode(hdr, got, &h, &e);
    if (rc == CAIRN_EVERSION) { /* a later cairn's file: not this version's to judge */
        if (checked_out != NULL)
            *checked_out = 0;
        rc = CAIRN_OK;
        goto out;
    }
    if (rc != CAIRN_OK) {
        acc_problem(fn, user, problems_out, 0, rc, e.msg);
        rc = CAIRN_OK;
        goto out;
    }
    cairn__db_store_id(db, sid);
    if (!cairn__store_id_is_zero(sid) && memcmp(sid, h.store_id, sizeof sid) != 0) {
        acc_problem(fn, user, problems_out, 24, CAIRN_ECORRUPT,
                    "ACCESS belongs to another store (its store id is not this store's)");
        goto out;
    }
    if ((buf = malloc(READ_CHUNK)) == NULL) {
        rc = cairn__fail(&e, CAIRN_ENOMEM, "no memory");
        goto out;
    }
    while (size >= off + ACC_ENTRY_SIZE) {
        uint64_t left = size - off;
        size_t want = left < READ_CHUNK ? (size_t)left : READ_CHUNK;
        accfile_scan sc;
        if ((rc = cairn__io_read(db->io, "access.read", fd, buf, want, off, &got, ACC_NAME, &e)) !=
            CAIRN_OK)
            goto out;
        cairn__accfile_scan(buf, got, off, h.file_id, note_gap, &g, &sc);
        bad += sc.skipped + sc.bad_entries * ACC_ENTRY_SIZE;
        off += sc.consumed;
        if (sc.consumed == 0 || got < want)
            break;
    }
    if (bad > 0) {
        char msg[CAIRN_ERRMSG_MAX];
        if (g.first == 0)
            g.first = g.expect; /* damage after the last good entry */
        snprintf(msg, sizeof msg, "ACCESS: %" PRIu64 " bytes hold no good entry, the first at "
                 "offset %" PRIu64 " (access statistics only; the next fold replaces the file)",
                 bad, g.first);
        acc_problem(fn, user, problems_out, g.first, CAIRN_ECHECKSUM, msg);
    }
out:
    free(buf);
    if (fd >= 0)
        cairn__io_close(db->io, "access.close", fd);
    /* What was found is reported above; this is what kept it from being
     * read (no permission, an I/O error, no memory): never "verified". */
    if (rc != CAIRN_OK)
        return cairn__db_failf(db, rc, "%s", e.msg);
    return CAIRN_OK;
}

