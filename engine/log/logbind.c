/*
 * logbind.c - binding derived files to the log they were folded from; see
 * logbind.h. The check costs one record read (the anchor), at open.
 */
#include "logbind.h"

#include <inttypes.h>
#include <string.h>

#include "bytes.h"
#include "store.h"

static int make(cairn_db *db, uint64_t covered, int sync, cairn__logbind *b, cairn__err *e)
{
    int sealed, rc = CAIRN_OK;

    memset(b, 0, sizeof *b);
    /* What the file folds is on disk first; the MANIFEST that lists the
     * file records it (cairn__seqfile_publish raises synced_seq). A merge
     * covers what an earlier file covered, recorded as durable then: no
     * sync, which a close would wait for behind the merge (the log an
     * ingest is writing). Unsynced, the records are written (the anchor
     * is read back). */
    if (covered > cairn__synced_seq(db))
        rc = sync ? cairn_sync(db) : cairn_flush(db);
    if (rc == CAIRN_OK)
        rc = cairn__record_at_or_before(db, covered, &b->anchor_seq, &b->anchor_sum, &sealed);
    if (rc != CAIRN_OK)
        return cairn__fail(e, rc, "%s", cairn_errmsg(db));
    cairn__db_store_id(db, b->store_id);
    if (cairn__store_id_is_zero(b->store_id))
        return cairn__fail(e, CAIRN_EINVAL, "the store has no id yet");
    return CAIRN_OK;
}

int cairn__logbind_make(cairn_db *db, uint64_t covered, cairn__logbind *b, cairn__err *e)
{
    return make(db, covered, 1, b, e);
}

int cairn__logbind_make_unsynced(cairn_db *db, uint64_t covered, cairn__logbind *b,
                                 cairn__err *e)
{
    return make(db, covered, 0, b, e);
}

int cairn__logbind_check(cairn_db *db, const char *name, uint64_t covered,
                         const cairn__logbind *b, cairn__err *e)
{
    uint8_t id[MAN_STORE_ID_LEN];
    uint64_t seq, sum;
    int sealed, rc;

    cairn__db_store_id(db, id);
    if (cairn__store_id_is_zero(id) || memcmp(id, b->store_id, sizeof id) != 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s belongs to another store (its store id is "
                           "not this store's)", name);
    if (b->anchor_seq > covered)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: its anchor record %" PRIu64
                           " is past the seq %" PRIu64 " it covers", name, b->anchor_seq, covered);
    /* Records it may have folded are gone (a reader met the loss before any
     * writer; a writer removed such files at its open). The anchor may be
     * intact past them. */
    if (db->read_only && db->lost_first != 0 && db->lost_first <= covered)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s was built from records the log no longer "
                           "holds (records %" PRIu64 "..%" PRIu64 " are lost)", name,
                           db->lost_first, db->lost_last);
    rc = cairn__record_at_or_before(db, covered, &seq, &sum, &sealed);
    if (rc == CAIRN_ENOMEM)
        return cairn__fail(e, rc, "%s: %s", name, cairn_errmsg(db));
    if (rc != CAIRN_OK) {
        /* The log is damaged where the anchor is (verify reports it there).
         * A sealed segment's records never change: the same record at the
         * same seq of the same store is the one the file names. Elsewhere
         * the binding cannot be checked now: not used, not removed. */
        if (sealed && seq == b->anchor_seq)
            return CAIRN_OK;
        return cairn__fail(e, CAIRN_EIO, "%s: the record it is bound to (%" PRIu64 ") cannot "
                           "be read: %s", name, seq, cairn_errmsg(db));
    }
    if (seq != b->anchor_seq || sum != b->anchor_sum) {
        if (seq != b->anchor_seq)
            return cairn__fail(e, CAIRN_ECORRUPT, "%s was built from records the log no longer "
                               "holds (it covers seq %" PRIu64 " up to record %" PRIu64
                               "; the log's newest record there is %" PRIu64 ")",
                               name, covered, b->anchor_seq, seq);
        return cairn__fail(e, CAIRN_ECORRUPT, "%s was built from records the log no longer "
                           "holds (record %" PRIu64 " in the log is not the one it folded)",
                           name, seq);
    }
    return CAIRN_OK;
}

void cairn__logbind_put(uint8_t *p, const cairn__logbind *b)
{
    memcpy(p, b->store_id, MAN_STORE_ID_LEN);
    put_le64(p + 16, b->anchor_seq);
    put_le64(p + 24, b->anchor_sum);
}

void cairn__logbind_get(const uint8_t *p, cairn__logbind *b)
{
    memcpy(b->store_id, p, MAN_STORE_ID_LEN);
    b->anchor_seq = get_le64(p + 16);
    b->anchor_sum = get_le64(p + 24);
}
