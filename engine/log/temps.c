/*
 * temps.c - the temporary files of a store, and whether a writer is live.
 *
 * Every file the engine writes from scratch is written as NAME.tmp and
 * renamed over NAME once complete and synced (cairn__io_publish):
 * MANIFEST.tmp, <id>.seg.tmp (a seal), and the derived files' temps
 * <prefix><seq><suffix>.tmp (seqfile.h: mem-*.cmx.tmp, graph-*.cgx.tmp).
 * One kind more is written by any handle: ACCESS.<hex>.tmp, the access side
 * file before it is linked or renamed into place (format-spec/access.md);
 * a writer open that removes one in flight only makes that recall record
 * nothing. KEYS.<hex>.tmp is a fresh KEYS before its rename, written by
 * a writer in its turn (format-spec/keys.md). And a merger thread writes its derived file as
 * NAME.<16 hex>.tmp outside the turn, renaming it inside one, as a flush
 * does with its file in a later turn; each holds an OFD lock on its temp
 * while it does (cairn__seqfile_temp_hold). Otherwise only a writer handle
 * writes them, and only in a turn, holding the LOCK flock
 * (format-spec/lock.md). So when a writer opens (in a turn), no other temp
 * is being written but those locked: any other was left by a crash (kill
 * -9 during a checkpoint leaves one as large as the index) or by a failed
 * write, and the open removes it (store.c, remove_orphans, through
 * cairn__temp_name and cairn__seqfile_temp_in_use).
 * Between writer opens they are only listed (cairn_temp_files, which
 * `cairn verify` and `cairn stats` print): nothing ever reads a temp, so
 * one is wasted space, not damage.
 */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "seqfile.h"

int cairn__temp_name(const char *n)
{
    size_t len = strlen(n);

    /* Any name ending in .seg.tmp, as format-spec/manifest.md has it. */
    return strcmp(n, MANIFEST_TMP) == 0 || (len > 8 && strcmp(n + len - 8, ".seg.tmp") == 0) ||
           cairn__seqfile_is_temp(n) ||
           (len > 11 && strncmp(n, "ACCESS.", 7) == 0 && strcmp(n + len - 4, ".tmp") == 0) ||
           (len > 9 && strncmp(n, "KEYS.", 5) == 0 && strcmp(n + len - 4, ".tmp") == 0);
}

/* Is this handle in a turn (holding the lock)? */
static int in_turn(cairn_db *db)
{
    int held = 0;
    if (!db->read_only) {
        pthread_mutex_lock(&db->mu);
        held = db->turn_held;
        pthread_mutex_unlock(&db->mu);
    }
    return held;
}

/* Does some handle hold the lock? A shared, non-blocking flock on a
 * descriptor of our own tells. */
static int probe_live(cairn_db *db)
{
    int fd, live = 0;

    /* Missing (or a symlink, which no writer would use): not live. */
    if (cairn__io_open(db->io, "lock.probe", db->dirfd, LOCK_NAME, O_RDONLY, 0, &fd, NULL) !=
        CAIRN_OK)
        return 0;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0)
        live = errno == EWOULDBLOCK;
    else
        flock(fd, LOCK_UN);
    cairn__io_close(db->io, "lock.probe", fd);
    return live;
}

int cairn__writer_live(cairn_db *db)
{
    return in_turn(db) ? 1 : probe_live(db);
}

int cairn__other_writer_live(cairn_db *db)
{
    return in_turn(db) ? 0 : probe_live(db);
}

int cairn_temp_files(cairn_db *db, cairn_temp_fn fn, void *user, uint64_t *count_out)
{
    int in_flight, compacting;
    uint64_t count = 0;
    DIR *d;
    struct dirent *de;

    if (count_out != NULL)
        *count_out = 0;
    if ((d = cairn__io_opendir(db->dirfd)) == NULL)
        return cairn__db_failf(db, CAIRN_EIO, "read directory %s: %s", db->path, strerror(errno));
    in_flight = cairn__writer_live(db);
    compacting = cairn__compaction_live(db); /* writes outside any turn */
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (!cairn__temp_name(de->d_name))
            continue;
        /* The entry itself, even a symlink: a writer open removes it too. */
        if (fstatat(db->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone meanwhile (renamed into place, or removed) */
        count++;
        if (fn != NULL)
            fn(user, de->d_name, (uint64_t)st.st_size,
               in_flight || (compacting && strstr(de->d_name, ".seg.tmp") != NULL));
    }
    closedir(d);
    if (count_out != NULL)
        *count_out = count;
    return CAIRN_OK;
}
