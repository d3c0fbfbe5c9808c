/*
 * keyfile.c - KEYS, the key sets shared by a store's writers (keyfile.h,
 * format-spec/keys.md): the checks over its bytes (pure, fuzzed by
 * fuzz/fuzz_keys.c), and its mapping by a handle in its turn.
 *
 * Why a fresh file is written in full, zeros and all, before it is
 * mapped: a store into a page of a file with a hole there would have the
 * kernel allocate the block at the fault, and on a full disk that fault
 * kills the process (SIGBUS). Written through write(2), the same full disk
 * is an error the handle survives (it keeps its sets in RAM).
 */
#define _GNU_SOURCE /* O_NOFOLLOW */
#include "keyfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot.h"
#include "bytes.h"
#include "filehdr.h"
#include "io.h"
#include "store.h"

_Static_assert(KEYS_OFF_RESERVED < FILEHDR_OFF_SUM, "reserved bytes before the header sum");
_Static_assert(KEYS_OFF_CORE == FILEHDR_SIZE, "the counts follow the common header");
_Static_assert(KEYS_OFF_CORE + sizeof(cairn__memkeys_core) <= KEYS_OFF_TABLES,
               "the counts fit before the sets");
_Static_assert(sizeof(cairn__memkeys_core) == 544, "the counts' layout (format-spec/keys.md)");
_Static_assert(KEYS_STORE_ID_LEN == MAN_STORE_ID_LEN, "the header holds the MANIFEST's store id");

void cairn__keyfile_head_encode(uint8_t *out, uint64_t boot, const uint8_t *store_id,
                                uint64_t slots, uint64_t base)
{
    cairn__memkeys_core c;

    memset(out, 0, KEYS_OFF_TABLES);
    cairn__filehdr_init(out, KEYS_MAGIC, KEYS_VERSION);
    put_le64(out + KEYS_OFF_BOOT, boot);
    if (store_id != NULL)
        memcpy(out + KEYS_OFF_STORE_ID, store_id, KEYS_STORE_ID_LEN);
    put_le64(out + KEYS_OFF_SLOTS, slots);
    cairn__filehdr_seal(out);
    memset(&c, 0, sizeof c);
    c.base = c.covered = base;
    memcpy(out + KEYS_OFF_CORE, &c, sizeof c);
}

static int zeros(const uint8_t *id, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (id[i] != 0)
            return 0;
    return 1;
}

int cairn__keyfile_check(const uint8_t *buf, size_t len, uint64_t file_size, uint64_t boot,
                         const uint8_t *store_id, uint64_t log_end, uint64_t *slots,
                         cairn__err *e)
{
    cairn__memkeys_core c;
    uint64_t s, sum = 0;
    int rc = cairn__filehdr_check(buf, len, KEYS_MAGIC, KEYS_VERSION, KEYS_NAME, e);

    *slots = 0;
    if (rc != CAIRN_OK)
        return rc;
    if (len < KEYS_OFF_TABLES)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: %zu bytes, shorter than its counts", KEYS_NAME,
                           len);
    if (!zeros(buf + KEYS_OFF_RESERVED, FILEHDR_OFF_SUM - KEYS_OFF_RESERVED))
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: reserved header bytes are not zero", KEYS_NAME);
    if (get_le64(buf + KEYS_OFF_BOOT) != boot || boot == 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: written in another boot of the machine",
                           KEYS_NAME);
    if (store_id != NULL && !zeros(store_id, KEYS_STORE_ID_LEN) &&
        memcmp(buf + KEYS_OFF_STORE_ID, store_id, KEYS_STORE_ID_LEN) != 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: the file of another store", KEYS_NAME);
    s = get_le64(buf + KEYS_OFF_SLOTS);
    if (s < KEYS_SLOTS_MIN || s > KEYS_SLOTS_MAX || (s & (s - 1)) != 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: %" PRIu64 " slots, not a power of 2 in "
                           "2^10..2^24", KEYS_NAME, s);
    if (file_size != KEYS_FILE_SIZE(s))
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: %" PRIu64 " bytes, not the %" PRIu64
                           " of %" PRIu64 " slots", KEYS_NAME, file_size, KEYS_FILE_SIZE(s), s);
    memcpy(&c, buf + KEYS_OFF_CORE, sizeof c);
    if (c.base > c.covered || c.covered > log_end)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: keys of seqs %" PRIu64 "..%" PRIu64
                           " (the log ends at %" PRIu64 ")", KEYS_NAME, c.base, c.covered,
                           log_end);
    if (c.n > s / 2 || c.n_ns > CAIRN__MEMKEYS_NS)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: %" PRIu64 " keys in %" PRIu64
                           " namespaces, past its room", KEYS_NAME, c.n, c.n_ns);
    for (uint64_t i = 0; i < c.n_ns; i++) {
        if (c.ns_key[i] == 0 || c.ns_n[i] > c.n - sum)
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: the count of namespace %" PRIu64
                               " is out of range", KEYS_NAME, i);
        sum += c.ns_n[i];
    }
    *slots = s;
    return CAIRN_OK;
}

/* ---- the mapping --------------------------------------------------- */

void cairn__keyfile_close(cairn__keyfile *kf)
{
    if (kf->map != NULL)
        munmap(kf->map, kf->len);
    kf->map = NULL;
    kf->len = 0;
    kf->slots = 0;
}

int cairn__keyfile_remove(cairn__keyfile *kf, cairn_db *db)
{
    cairn__err e;
    int rc;
    cairn__keyfile_close(kf);
    rc = cairn__io_unlink(db->io, "keys.unlink", db->dirfd, KEYS_NAME, &e);
    return rc == CAIRN_OK ? CAIRN_OK : cairn__db_fail(db, rc, &e);
}

/* Check the file fd (st: its fstat) and map it; 1 when it serves. */
static int map_checked(cairn__keyfile *kf, int fd, const struct stat *st, uint64_t boot,
                       const uint8_t *sid, uint64_t log_end)
{
    uint8_t head[KEYS_OFF_TABLES];
    uint64_t slots;
    void *p;

    /* The header first, by read: a file too short for what it says would
     * fault past its end once mapped. */
    if (pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
        cairn__keyfile_check(head, sizeof head, (uint64_t)st->st_size, boot, sid, log_end, &slots,
                             NULL) != CAIRN_OK)
        return 0;
    p = mmap(NULL, (size_t)st->st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return 0;
    cairn__keyfile_close(kf);
    /* Each process's first store into each page of a shared file mapping
     * faults for it (ext4 then dirties the page: 3 us a page, 2,048 pages
     * a process); ask for all of them writable at once. */
#ifdef MADV_POPULATE_WRITE
    (void)madvise(p, (size_t)st->st_size, MADV_POPULATE_WRITE);
#endif
    kf->map = p;
    kf->len = (size_t)st->st_size;
    kf->slots = slots;
    kf->dev = st->st_dev;
    kf->ino = st->st_ino;
    return 1;
}

/* A fresh file, written whole as a temp and renamed over KEYS. */
static int make_fresh(cairn__keyfile *kf, cairn_db *db, uint64_t boot, const uint8_t *sid,
                      uint64_t log_end, uint64_t base)
{
    const cairn_io *io = db->io;
    const size_t chunk = 1u << 20;
    uint64_t size = KEYS_FILE_SIZE(KEYS_SLOTS);
    uint8_t *buf = calloc(1, chunk);
    struct stat st;
    char tmp[64];
    int fd = -1, rc, ok = 0;

    if (buf == NULL)
        return CAIRN_ENOMEM;
    snprintf(tmp, sizeof tmp, "%s.%016" PRIx64 ".tmp", KEYS_NAME, cairn__random_salt());
    rc = cairn__io_open(io, "keys.create", db->dirfd, tmp, O_RDWR | O_CREAT | O_EXCL, 0644, &fd,
                        NULL);
    if (rc != CAIRN_OK) {
        free(buf);
        return rc;
    }
    for (uint64_t off = KEYS_OFF_TABLES; rc == CAIRN_OK && off < size; off += chunk) {
        size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
        rc = cairn__io_write(io, "keys.create", fd, buf, n, off, tmp, NULL);
    }
    cairn__keyfile_head_encode(buf, boot, sid, KEYS_SLOTS, base);
    if (rc == CAIRN_OK)
        rc = cairn__io_write(io, "keys.create", fd, buf, KEYS_OFF_TABLES, 0, tmp, NULL);
    free(buf);
    if (rc == CAIRN_OK && fstat(fd, &st) != 0)
        rc = cairn__errno_status(errno);
    if (rc == CAIRN_OK)
        ok = map_checked(kf, fd, &st, boot, sid, log_end);
    cairn__io_close(io, "keys.create", fd);
    if (rc == CAIRN_OK && !ok)
        rc = CAIRN_EIO;
    if (rc == CAIRN_OK)
        rc = cairn__io_rename(io, "keys.rename", db->dirfd, tmp, KEYS_NAME, NULL);
    if (rc != CAIRN_OK) {
        (void)cairn__io_unlink(io, "keys.unlink", db->dirfd, tmp, NULL);
        cairn__keyfile_close(kf);
    }
    return rc;
}

int cairn__keyfile_use(cairn__keyfile *kf, cairn_db *db, uint64_t log_end, uint64_t fresh_base,
                       int renew)
{
    uint8_t sid[KEYS_STORE_ID_LEN];
    uint64_t boot, slots;
    struct stat st;
    int fd, rc;

    if (kf->off)
        return CAIRN_EUNAVAIL;
    if ((boot = cairn__boot_id()) == 0) {
        kf->off = 1; /* a file that cannot tell a crash of the machine */
        return CAIRN_EUNAVAIL;
    }
    cairn__db_store_id(db, sid);
    if (!renew && fstatat(db->dirfd, KEYS_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode)) {
        /* The file mapped already: its counts checked again (another
         * writer's turn changed them; one killed in it may have left them
         * past the log's end). */
        if (kf->map != NULL && st.st_dev == kf->dev && st.st_ino == kf->ino &&
            (uint64_t)st.st_size == kf->len &&
            cairn__keyfile_check(kf->map, KEYS_OFF_TABLES, kf->len, boot, sid, log_end, &slots,
                                 NULL) == CAIRN_OK)
            return CAIRN_OK;
        if (cairn__io_open(db->io, "keys.open", db->dirfd, KEYS_NAME, O_RDWR | O_NOFOLLOW, 0, &fd,
                           NULL) == CAIRN_OK) {
            int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                     map_checked(kf, fd, &st, boot, sid, log_end);
            cairn__io_close(db->io, "keys.open", fd);
            if (ok)
                return CAIRN_OK;
        }
    }
    if ((rc = make_fresh(kf, db, boot, sid, log_end, fresh_base)) != CAIRN_OK)
        kf->off = 1;
    return rc;
}

void cairn__keyfile_premap(cairn__keyfile *kf, cairn_db *db)
{
    uint8_t sid[KEYS_STORE_ID_LEN];
    uint64_t boot;
    struct stat st;
    int fd;

    if (kf->off || kf->map != NULL || (boot = cairn__boot_id()) == 0)
        return;
    cairn__db_store_id(db, sid);
    if (cairn__io_open(db->io, "keys.open", db->dirfd, KEYS_NAME, O_RDWR | O_NOFOLLOW, 0, &fd,
                       NULL) != CAIRN_OK)
        return;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        (void)map_checked(kf, fd, &st, boot, sid, UINT64_MAX);
    cairn__io_close(db->io, "keys.open", fd);
}

cairn__memkeys_core *cairn__keyfile_core(const cairn__keyfile *kf)
{
    return (cairn__memkeys_core *)(void *)(kf->map + KEYS_OFF_CORE);
}

uint64_t *cairn__keyfile_content(const cairn__keyfile *kf)
{
    return (uint64_t *)(void *)(kf->map + KEYS_OFF_TABLES);
}

uint64_t *cairn__keyfile_ids(const cairn__keyfile *kf)
{
    return cairn__keyfile_content(kf) + kf->slots;
}
