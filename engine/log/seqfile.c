/*
 * seqfile.c - see seqfile.h.
 */
#define _GNU_SOURCE /* F_OFD_SETLK, F_OFD_GETLK */
#include "seqfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "alloc.h"
#include "bytes.h"
#include "filehdr.h"
#include "io.h"
#include "manifest.h"
#include "store.h"

const cairn__seqfile_kind cairn__seqfile_memindex = {
    "mem-", ".cmx", "memindex.open", "memindex.close", "memindex.unlink", MAN_FILE_MEMINDEX, 1};
const cairn__seqfile_kind cairn__seqfile_graph = {"graph-", ".cgx", "graph.open", "graph.close",
                                                   "graph.unlink", MAN_FILE_GRAPH, 0};
const cairn__seqfile_kind cairn__seqfile_graphgen = {
    "graph-", ".cgg", "graphgen.open", "graphgen.close", "graphgen.unlink", MAN_FILE_GRAPHGEN, 0};

const cairn__seqfile_kind *const cairn__seqfile_kinds[SEQFILE_KINDS] = {
    &cairn__seqfile_memindex, &cairn__seqfile_graph, &cairn__seqfile_graphgen};

const cairn__seqfile_kind *cairn__seqfile_kind_of(uint8_t code)
{
    return cairn__seqfile_kinds[code - MAN_FILE_MEMINDEX];
}

int cairn__seqfile_parse(const cairn__seqfile_kind *k, const char *n, uint64_t *seq)
{
    size_t pl = strlen(k->prefix), sl = strlen(k->suffix);
    char *end;
    if (strlen(n) != pl + 16 + sl || strncmp(n, k->prefix, pl) != 0 ||
        strcmp(n + pl + 16, k->suffix) != 0)
        return 0;
    for (size_t i = pl; i < pl + 16; i++)
        if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
            return 0;
    *seq = strtoull(n + pl, &end, 16);
    return end == n + pl + 16;
}

static int lower(char c)
{
    return c >= 'a' && c <= 'z';
}

int cairn__seqfile_is_temp(const char *n)
{
    size_t len = strlen(n), i = 0, j;
    if (len < 4 || strcmp(n + len - 4, ".tmp") != 0)
        return 0;
    len -= 4;
    while (i < len && lower(n[i]))
        i++;
    if (i == 0 || i >= len || n[i] != '-')
        return 0;
    i++; /* past the prefix */
    for (j = i; j < i + 16; j++)
        if (j >= len || !((n[j] >= '0' && n[j] <= '9') || (n[j] >= 'a' && n[j] <= 'f')))
            return 0;
    if (j >= len || n[j] != '.')
        return 0;
    /* a merger's: .<16 hex> before .tmp */
    if (len - j > 18 && n[len - 17] == '.') {
        for (size_t h = len - 16; h < len; h++)
            if (!((n[h] >= '0' && n[h] <= '9') || (n[h] >= 'a' && n[h] <= 'f')))
                return 0;
        len -= 17;
    }
    if (len - j - 1 < 1 || len - j - 1 > 8)
        return 0;
    for (j++; j < len; j++)
        if (!lower(n[j]))
            return 0;
    return 1;
}

void cairn__seqfile_temp_hold(int fd)
{
#ifdef F_OFD_SETLK
    struct flock l;
    memset(&l, 0, sizeof l);
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET; /* the whole file */
    (void)fcntl(fd, F_OFD_SETLK, &l);
#else
    (void)fd;
#endif
}

int cairn__seqfile_temp_in_use(int dirfd, const char *n)
{
    size_t len = strlen(n);
    struct flock l;
    int fd, held;
    /* salted: <...>.<16 hex>.tmp */
    if (!cairn__seqfile_is_temp(n) || len < 21 || n[len - 21] != '.')
        return 0;
#ifdef F_OFD_GETLK
    if ((fd = openat(dirfd, n, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
        return 0;
    memset(&l, 0, sizeof l);
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    held = fcntl(fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK;
    close(fd);
    return held;
#else
    (void)dirfd;
    (void)l;
    (void)fd;
    (void)held;
    return 0;
#endif
}

void cairn__seqfile_temp(const cairn__seqfile_kind *k, uint64_t seq, uint64_t salt, char *out,
                         size_t cap)
{
    if (salt == 0)
        snprintf(out, cap, "%s%016" PRIx64 "%s.tmp", k->prefix, seq, k->suffix);
    else
        snprintf(out, cap, "%s%016" PRIx64 "%s.%016" PRIx64 ".tmp", k->prefix, seq, k->suffix,
                 salt);
}

void cairn__seqfile_name(const cairn__seqfile_kind *k, uint64_t seq, char *out, size_t cap)
{
    snprintf(out, cap, "%s%016" PRIx64 "%s", k->prefix, seq, k->suffix);
}

/* The list as it is now: the MANIFEST's, or with no MANIFEST (a bare
 * directory: tests, tools) the files the directory holds. */
static int listing(const cairn_io *io, int dirfd, manifest *m, cairn__err *e)
{
    int rc = cairn__manifest_read(io, dirfd, NULL, m, e);
    if (rc == CAIRN_ENOTFOUND) {
        memset(m, 0, sizeof *m);
        rc = cairn__derived_scan(io, dirfd, NULL, &m->files, &m->n_files, e);
    }
    return rc;
}

/* The newest listed file of k with seq <= max_seq; NULL if none. */
static const manifest_file *newest_listed(const manifest *m, const cairn__seqfile_kind *k,
                                          uint64_t max_seq)
{
    const manifest_file *best = NULL;
    for (size_t i = 0; i < m->n_files; i++)
        if (m->files[i].kind == k->code && m->files[i].seq <= max_seq &&
            (best == NULL || m->files[i].seq > best->seq))
            best = &m->files[i];
    return best;
}

static void sleep_ms(int ms)
{
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

/* How long after its rename a whole file that is not the listed one may
 * still be a file being put in place under a listed name (a merge's, whose
 * writer lists it in a new MANIFEST next): a reader waits that long for
 * the list. */
#define SEQFILE_WAIT_MS 1000

void cairn__seqfile_id_of(const struct stat *st, cairn__fileid *id)
{
    id->dev = (uint64_t)st->st_dev;
    id->ino = (uint64_t)st->st_ino;
    id->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

/* A header whose own checksum holds (bytes 56..63 over 0..55). */
static int whole_header(const uint8_t *h)
{
    return get_le64(h + FILEHDR_OFF_SUM) == XXH3_64bits(h, FILEHDR_OFF_SUM);
}

static int renamed_lately(const struct stat *st)
{
    struct timespec now;
    int64_t age;
    clock_gettime(CLOCK_REALTIME, &now);
    age = ((int64_t)now.tv_sec - st->st_ctim.tv_sec) * 1000 +
          (now.tv_nsec - st->st_ctim.tv_nsec) / 1000000;
    return age < SEQFILE_WAIT_MS;
}

int cairn__seqfile_map(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd,
                       uint64_t max_seq, char *name, size_t cap, uint64_t *seq, uint8_t **map,
                       size_t *len, size_t min_len, cairn__fileid *id, cairn__err *e)
{
    struct stat st;
    int fd = -1, rc, missing = 0, waited = 0;
    void *p;

    *map = NULL;
    *len = 0;
    /* A writer replaces a file by renaming a newer one in, listing it,
     * then removing the old: a name read just before may be gone (the
     * MANIFEST read again no longer lists it), or hold the new file before
     * the MANIFEST lists it (wait for that MANIFEST). */
    for (;;) {
        manifest m;
        const manifest_file *f;
        uint64_t want_len, want_sum;
        uint8_t h[FILEHDR_SIZE];
        size_t got = 0;

        if ((rc = listing(io, dirfd, &m, e)) != CAIRN_OK)
            return rc == CAIRN_ENOTFOUND ? CAIRN_EIO : rc;
        f = newest_listed(&m, k, max_seq);
        if (f == NULL) {
            cairn__manifest_free(NULL, &m);
            return CAIRN_ENOTFOUND;
        }
        *seq = f->seq;
        want_len = f->len;
        want_sum = f->sum;
        cairn__manifest_free(NULL, &m);
        cairn__seqfile_name(k, *seq, name, cap);
        rc = cairn__io_open(io, k->site_open, dirfd, name, O_RDONLY, 0, &fd, e);
        if (rc == CAIRN_ENOTFOUND) {
            if (++missing < 3)
                continue;
            /* removed (set aside by a reader, or by hand): as if not
             * listed, the next one down is taken; the next writer's open
             * drops it from the list */
            if (*seq == 0)
                return cairn__fail(e, CAIRN_ENOTFOUND, "%s is listed in the MANIFEST but "
                                   "missing", name);
            max_seq = *seq - 1;
            missing = 0;
            continue;
        }
        if (rc != CAIRN_OK)
            return rc;
        if (fstat(fd, &st) != 0)
            memset(&st, 0, sizeof st);
        rc = cairn__io_read(io, k->site_open, fd, h, sizeof h, 0, &got, name, e);
        if (rc != CAIRN_OK) { /* unreadable for now: not blamed */
            cairn__io_close(io, k->site_close, fd);
            return rc;
        }
        if (got != sizeof h)
            memset(h, 0, sizeof h);
        if ((uint64_t)st.st_size == want_len && get_le64(h + FILEHDR_OFF_SUM) == want_sum)
            break; /* the listed file */
        cairn__io_close(io, k->site_close, fd);
        /* Another whole file (its header sound) renamed in a moment ago:
         * one being put in place, listed next: wait for that list. */
        if (whole_header(h) && renamed_lately(&st) && ++waited <= SEQFILE_WAIT_MS) {
            sleep_ms(1);
            continue;
        }
        /* Not the listed file (a write cut short between its rename and
         * its MANIFEST, a file copied in, a damaged header): never read,
         * never set aside by a reader (it may be a writer's, listed in a
         * moment); the next one down is taken, and the next writer's open
         * settles it (cairn__seqfile_settle). */
        (void)cairn__fail(e, CAIRN_ENOTFOUND, "%s is not the file the MANIFEST lists", name);
        if (*seq == 0)
            return CAIRN_ENOTFOUND;
        max_seq = *seq - 1;
        waited = 0;
    }
    if (id != NULL)
        cairn__seqfile_id_of(&st, id);
    if ((uint64_t)st.st_size < min_len) {
        cairn__io_close(io, k->site_close, fd);
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: too short", name);
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    cairn__io_close(io, k->site_close, fd);
    if (p == MAP_FAILED)
        return cairn__fail(e, CAIRN_EIO, "mmap %s: %s", name, strerror(errno));
    *map = p;
    *len = (size_t)st.st_size;
    return CAIRN_OK;
}

uint64_t cairn__seqfile_newest(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd)
{
    manifest m;
    const manifest_file *f;
    uint64_t best;
    if (listing(io, dirfd, &m, NULL) != CAIRN_OK)
        return UINT64_MAX;
    f = newest_listed(&m, k, UINT64_MAX);
    best = f != NULL ? f->seq : 0;
    cairn__manifest_free(NULL, &m);
    return best;
}

int cairn__seqfile_list(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd,
                        uint64_t *out, size_t cap, size_t *n, cairn__err *e)
{
    manifest m;
    int rc = listing(io, dirfd, &m, e);
    *n = 0;
    if (rc != CAIRN_OK)
        return rc;
    for (size_t i = 0; i < m.n_files; i++) /* by kind, then seq */
        if (m.files[i].kind == k->code) {
            if (*n < cap)
                out[*n] = m.files[i].seq;
            (*n)++;
        }
    cairn__manifest_free(NULL, &m);
    return CAIRN_OK;
}

/* ---- changing the list ---------------------------------------------------- */

typedef struct change_run {
    const cairn__seqfile_change *c;
    manifest_file added;
    manifest_file gone[MAN_FILES_MAX]; /* what the new list dropped */
    size_t n_gone;
} change_run;

static int in_list(const uint64_t *v, size_t n, uint64_t x)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

/* Does the change drop this listed file? */
static int drops(const cairn__seqfile_change *c, const manifest_file *f)
{
    if (c->clear != NULL && f->kind == c->clear->code)
        return 1;
    if (f->kind != c->k->code || (c->adding && f->seq == c->add))
        return 0;
    return (c->keep_only && !in_list(c->keep, c->n_keep, f->seq)) ||
           in_list(c->drop, c->n_drop, f->seq) || (c->drop_from != 0 && f->seq >= c->drop_from);
}

static int change_apply(cairn_db *db, manifest *m, const manifest *cur, uint64_t v)
{
    change_run *run = (change_run *)(uintptr_t)v;
    const cairn__seqfile_change *c = run->c;
    size_t n = 0;
    int changed = 0;

    run->n_gone = 0;
    /* m->files has room for one more than cur's (cairn__manifest_copy) */
    for (size_t i = 0; i < cur->n_files; i++) {
        const manifest_file *f = &cur->files[i];
        if (c->adding && f->kind == run->added.kind && f->seq == run->added.seq) {
            changed |= f->len != run->added.len || f->sum != run->added.sum;
            continue; /* replaced by the file added */
        }
        if (drops(c, f)) {
            run->gone[run->n_gone++] = *f;
            changed = 1;
            continue;
        }
        m->files[n++] = *f;
    }
    if (c->adding) {
        size_t at = n;
        if (cairn__manifest_file(cur, run->added.kind, run->added.seq) == NULL)
            changed = 1;
        if (n >= MAN_FILES_MAX)
            return cairn__db_failf(db, CAIRN_EINVAL, "the MANIFEST lists %u derived files "
                                   "already", MAN_FILES_MAX);
        while (at > 0 && cairn__manifest_file_cmp(&m->files[at - 1], &run->added) > 0) {
            m->files[at] = m->files[at - 1];
            at--;
        }
        m->files[at] = run->added;
        n++;
        /* A listed file never covers more than the log had on disk. */
        if (c->add > cur->synced_seq) {
            if (c->add >= db->next_seq)
                return cairn__db_failf(db, CAIRN_EINVAL, "seq %llu has not been handed out",
                                       (unsigned long long)c->add);
            m->synced_seq = c->add;
            changed = 1;
        }
    }
    m->n_files = n;
    return changed;
}

static void change_undo(manifest *m, const manifest *cur)
{
    if (cur->n_files)
        memcpy(m->files, cur->files, cur->n_files * sizeof *m->files);
    m->n_files = cur->n_files;
    m->synced_seq = cur->synced_seq;
}

/* The bytes at the name now: its length and header (zeros when shorter);
 * CAIRN_OK when it is there and could be read. */
static int file_now(cairn_db *db, const cairn__seqfile_kind *k, const char *name, uint64_t *len,
                    uint8_t *h, cairn__err *e)
{
    struct stat st;
    size_t got = 0;
    int fd, rc = cairn__io_open(db->io, k->site_open, db->dirfd, name, O_RDONLY, 0, &fd, e);
    memset(&st, 0, sizeof st);
    if (rc != CAIRN_OK)
        return rc;
    if (fstat(fd, &st) != 0)
        rc = cairn__fail(e, CAIRN_EIO, "stat %s: %s", name, strerror(errno));
    else
        rc = cairn__io_read(db->io, k->site_open, fd, h, FILEHDR_SIZE, 0, &got, name, e);
    cairn__io_close(db->io, k->site_close, fd);
    if (rc == CAIRN_OK && got != FILEHDR_SIZE)
        memset(h, 0, FILEHDR_SIZE);
    *len = (uint64_t)st.st_size;
    return rc;
}

/* The file's length and header sum as they are now, as the list keeps them. */
static int file_id(cairn_db *db, const cairn__seqfile_kind *k, uint64_t seq, manifest_file *f,
                   cairn__err *e)
{
    char name[64];
    uint8_t h[FILEHDR_SIZE];
    uint64_t len = 0;
    int rc;

    cairn__seqfile_name(k, seq, name, sizeof name);
    rc = file_now(db, k, name, &len, h, e);
    if (rc == CAIRN_OK && len < FILEHDR_SIZE)
        rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: shorter than its header", name);
    f->kind = k->code;
    f->seq = seq;
    f->len = len;
    f->sum = rc == CAIRN_OK ? get_le64(h + FILEHDR_OFF_SUM) : 0;
    return rc;
}

/* With keep_only: the files of k the directory holds that the change does
 * not keep (leftovers no MANIFEST lists), and NAME.tmp of those seqs. */
static void unlink_unkept(cairn_db *db, const cairn__seqfile_change *c)
{
    const cairn__seqfile_kind *k = c->k;
    size_t pl = strlen(k->prefix), sl = strlen(k->suffix);
    DIR *d = cairn__io_opendir(db->dirfd);
    struct dirent *de;
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        uint64_t s = 0;
        size_t n = strlen(de->d_name);
        char base[64];
        if (n == pl + 16 + sl + 4 && strcmp(de->d_name + n - 4, ".tmp") == 0) {
            snprintf(base, sizeof base, "%.*s", (int)(n - 4), de->d_name); /* NAME.tmp */
            if (!cairn__seqfile_parse(k, base, &s))
                continue;
        } else if (!cairn__seqfile_parse(k, de->d_name, &s)) {
            continue;
        }
        if (!(c->adding && s == c->add) && !in_list(c->keep, c->n_keep, s))
            (void)cairn__io_unlink(db->io, k->site_unlink, db->dirfd, de->d_name, NULL);
    }
    closedir(d);
}

int cairn__seqfile_change_apply(cairn_db *db, const cairn__seqfile_change *c, cairn__err *e)
{
    static const manifest_change mc = {change_apply, change_undo};
    change_run *run = calloc(1, sizeof *run);
    int rc;

    if (run == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "no memory to list a derived file");
    run->c = c;
    if (c->adding && (rc = file_id(db, c->k, c->add, &run->added, e)) != CAIRN_OK) {
        free(run);
        return rc;
    }
    rc = cairn__change_manifest(db, &mc, (uint64_t)(uintptr_t)run);
    if (rc != CAIRN_OK) {
        (void)cairn__fail(e, rc, "%s", cairn_errmsg(db));
        free(run);
        return rc;
    }
    /* Listed no more: no reader opens them from now on (one that has them
     * mapped keeps its pages). */
    for (size_t i = 0; i < run->n_gone; i++) {
        const cairn__seqfile_kind *k = cairn__seqfile_kind_of(run->gone[i].kind);
        char name[64], tmp[72];
        cairn__seqfile_name(k, run->gone[i].seq, name, sizeof name);
        snprintf(tmp, sizeof tmp, "%s.tmp", name);
        (void)cairn__io_unlink(db->io, k->site_unlink, db->dirfd, name, NULL);
        (void)cairn__io_unlink(db->io, k->site_unlink, db->dirfd, tmp, NULL);
    }
    if (c->keep_only)
        unlink_unkept(db, c);
    free(run);
    return CAIRN_OK;
}

int cairn__seqfile_publish(cairn_db *db, const cairn__seqfile_kind *k, uint64_t seq,
                           const uint64_t *keep, size_t n_keep, cairn__err *e)
{
    cairn__seqfile_change c;
    memset(&c, 0, sizeof c);
    c.k = k;
    c.adding = 1;
    c.add = seq;
    c.keep = keep;
    c.n_keep = n_keep;
    c.keep_only = keep != NULL;
    return cairn__seqfile_change_apply(db, &c, e);
}

void cairn__seqfile_remove_except(cairn_db *db, const cairn__seqfile_kind *k,
                                  const uint64_t *keep, size_t n_keep)
{
    cairn__seqfile_change c;
    cairn__err e;
    memset(&c, 0, sizeof c);
    c.k = k;
    c.keep = keep;
    c.n_keep = n_keep;
    c.keep_only = 1;
    (void)cairn__seqfile_change_apply(db, &c, &e);
}

void cairn__seqfile_remove_from(cairn_db *db, const cairn__seqfile_kind *k, uint64_t from_seq)
{
    cairn__seqfile_change c;
    cairn__err e;
    memset(&c, 0, sizeof c);
    c.k = k;
    c.drop_from = from_seq ? from_seq : 1;
    (void)cairn__seqfile_change_apply(db, &c, &e);
}

/* Where a kind with has_base keeps its base in the file header. */
#define SEQFILE_OFF_BASE 24

/* The listed files of k that a file of it at seq lying on base (0: a whole
 * file) replaces, into drop: those between them. None unless the file it
 * lies on is listed and there as listed (another writer's merge may have
 * replaced it since: the files between are then what a reader falls back
 * on). */
static size_t replaced_by(cairn_db *db, const manifest_file *files, size_t n,
                          const cairn__seqfile_kind *k, uint64_t seq, uint64_t base, uint64_t *drop)
{
    size_t n_drop = 0;
    if (base >= seq)
        return 0; /* not a file this build wrote: its own checks refuse it */
    if (base != 0) {
        const manifest_file *below = NULL;
        uint8_t h[FILEHDR_SIZE];
        uint64_t len = 0;
        char name[64];
        for (size_t i = 0; i < n; i++)
            if (files[i].kind == k->code && files[i].seq == base)
                below = &files[i];
        if (below == NULL)
            return 0;
        cairn__seqfile_name(k, base, name, sizeof name);
        if (file_now(db, k, name, &len, h, NULL) != CAIRN_OK || len != below->len ||
            get_le64(h + FILEHDR_OFF_SUM) != below->sum)
            return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (files[i].kind == k->code && files[i].seq > base && files[i].seq < seq)
            drop[n_drop++] = files[i].seq;
    return n_drop;
}

void cairn__seqfile_settle(cairn_db *db)
{
    view *v = cairn__view_acquire(db);
    manifest_file *files = NULL;
    uint64_t *drop = NULL;
    size_t n = v->m.n_files;
    /* a copy: each change below publishes a new view */
    if (n > 0 && (files = malloc(n * sizeof *files)) != NULL)
        memcpy(files, v->m.files, n * sizeof *files);
    cairn__view_release(db, v);
    if (n > 0)
        drop = malloc(n * sizeof *drop); /* NULL: nothing dropped with a file listed */
    for (size_t i = 0; i < n && files != NULL; i++) {
        const cairn__seqfile_kind *k = cairn__seqfile_kind_of(files[i].kind);
        cairn__seqfile_change c;
        cairn__err e;
        uint8_t h[FILEHDR_SIZE];
        uint64_t len = 0, seq = files[i].seq;
        char name[64];
        int rc;
        cairn__seqfile_name(k, seq, name, sizeof name);
        rc = file_now(db, k, name, &len, h, NULL);
        if (rc == CAIRN_OK && len == files[i].len && get_le64(h + FILEHDR_OFF_SUM) == files[i].sum)
            continue; /* the listed file */
        if (rc != CAIRN_OK && rc != CAIRN_ENOTFOUND)
            continue; /* unreadable for now: left as it is */
        memset(&c, 0, sizeof c);
        c.k = k;
        if (rc == CAIRN_OK && whole_header(h)) {
            /* Put in place under a listed name by a write whose MANIFEST
             * never came (nothing is in flight in this turn): listed as it
             * is; its own checks and binding decide whether it is used.
             * That MANIFEST would have dropped the files it replaces (a
             * merge's run below it; every older one for a whole file):
             * dropped now, not left on disk until the next checkpoint. */
            c.adding = 1;
            c.add = seq;
            if (k->has_base && drop != NULL) {
                c.drop = drop;
                c.n_drop = replaced_by(db, files, n, k, seq, get_le64(h + SEQFILE_OFF_BASE), drop);
            }
        } else {
            c.drop = &seq; /* missing, or its header damaged: dropped (unlinked) */
            c.n_drop = 1;
        }
        (void)cairn__seqfile_change_apply(db, &c, &e);
    }
    free(drop);
    free(files);
}

void cairn__seqfile_set_aside(cairn_db *db, const cairn__seqfile_kind *k, const char *name,
                              const cairn__fileid *seen)
{
    struct stat st;
    cairn__fileid now;
    if (fstatat(db->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    if (S_ISLNK(st.st_mode)) { /* a symlink planted under the name: the link goes */
        (void)cairn__io_unlink(db->io, k->site_unlink, db->dirfd, name, NULL);
        return;
    }
    /* Only the file found damaged: not one a writer put in place since
     * (a file of the same state written again has the same header). */
    cairn__seqfile_id_of(&st, &now);
    if (seen != NULL && seen->ino != 0 && now.dev == seen->dev && now.ino == seen->ino &&
        now.ctime_ns == seen->ctime_ns)
        (void)cairn__io_unlink(db->io, k->site_unlink, db->dirfd, name, NULL);
}

/* A whole file renamed under a listed name a moment ago while a writer may
 * still be listing it (seqfile_map waits for such a one). */
static int in_flight(cairn_db *db, const cairn__seqfile_kind *k, const char *name)
{
    struct stat st;
    uint8_t h[FILEHDR_SIZE];
    uint64_t len;
    return file_now(db, k, name, &len, h, NULL) == CAIRN_OK && whole_header(h) &&
           fstatat(db->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && renamed_lately(&st);
}

void cairn__seqfile_verify(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems)
{
    manifest m;
    cairn__err e;
    if (listing(db->io, db->dirfd, &m, &e) != CAIRN_OK)
        return; /* the MANIFEST's own check reports it */
    for (size_t i = 0; i < m.n_files; i++) {
        const manifest_file *f = &m.files[i];
        manifest_file now;
        char name[64], msg[CAIRN_ERRMSG_MAX];
        int rc;
        cairn__seqfile_name(cairn__seqfile_kind_of(f->kind), f->seq, name, sizeof name);
        rc = file_id(db, cairn__seqfile_kind_of(f->kind), f->seq, &now, &e);
        /* Missing: set aside by a reader (damage it met, reported then) or
         * removed by hand; readers take it as not there and the next
         * writer's open drops it. Not a problem of the store. */
        if ((rc == CAIRN_OK && now.len == f->len && now.sum == f->sum) || rc == CAIRN_ENOTFOUND)
            continue;
        if (rc == CAIRN_OK && in_flight(db, cairn__seqfile_kind_of(f->kind), name))
            continue; /* a merge's file, listed in a moment */
        if (rc == CAIRN_OK)
            snprintf(msg, sizeof msg, "%s is not the file the MANIFEST lists: %llu bytes, header "
                     "sum %016llx; listed %llu bytes, %016llx", name,
                     (unsigned long long)now.len, (unsigned long long)now.sum,
                     (unsigned long long)f->len, (unsigned long long)f->sum);
        else
            snprintf(msg, sizeof msg, "%s", e.msg);
        (*problems)++;
        if (fn != NULL)
            fn(user, name, 0, rc == CAIRN_OK ? CAIRN_ECORRUPT : rc, msg);
    }
    cairn__manifest_free(NULL, &m);
}
