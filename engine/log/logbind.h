/*
 * logbind.h - what binds a derived file (the memory index, the graph file)
 * to the exact log it was folded from (format-spec/README.md, "Binding of
 * derived files").
 *
 * A derived file names the seq it covers; that alone cannot tell the log it
 * was built from from another log that reached the same seq (a tail cut at
 * a record boundary and written again, another store's file copied in). So
 * each carries a 32-byte binding block:
 *
 *   off size field
 *    0  16   store_id    the store's id (MANIFEST)
 *   16   8   anchor_seq  the newest record at or before the covered seq (0: none)
 *   24   8   anchor_sum  that record's checksum, seeded with its segment's
 *                        random salt: no other log has the same one
 *
 * and a reader uses the file only when the store's id and the record the log
 * holds at anchor_seq (found again from the covered seq) are the same.
 */
#ifndef CAIRN_LOGBIND_H
#define CAIRN_LOGBIND_H

#include <stdint.h>

#include "cairn.h"
#include "manifest.h"
#include "status.h"

#define LOGBIND_SIZE 32u

typedef struct cairn__logbind {
    uint8_t store_id[MAN_STORE_ID_LEN];
    uint64_t anchor_seq;
    uint64_t anchor_sum;
} cairn__logbind;

/* The binding of a file that will fold every record up to `covered`: syncs
 * the log (when covered is past the MANIFEST's synced_seq; the MANIFEST that
 * lists the file records it: cairn__seqfile_publish, so that a log that
 * later ends before it is noticed), reads the anchor. Writers only.
 * Errors: those of cairn_sync and of reading the anchor record; the
 * message in e. */
int cairn__logbind_make(cairn_db *db, uint64_t covered, cairn__logbind *b, cairn__err *e);

/* The same without the sync: the log is written (cairn_flush) and the
 * anchor read. The caller syncs the log (cairn_sync) before the file is in
 * place, so that the sync runs while the file is written. */
int cairn__logbind_make_unsynced(cairn_db *db, uint64_t covered, cairn__logbind *b,
                                 cairn__err *e);

/* CAIRN_OK when the file `name` covering `covered` with binding b belongs
 * to this store's log as it is now; CAIRN_ECORRUPT, with the reason in e,
 * when it belongs to another store or to records the log no longer holds
 * (the file must not be used: rebuild from the log; a writer removes it).
 * CAIRN_EIO when the anchor record cannot be read (damage in the log, which
 * verify reports there): not used, not removed; one in a sealed segment is
 * taken as it is named (sealed records never change). CAIRN_ENOMEM. */
int cairn__logbind_check(cairn_db *db, const char *name, uint64_t covered,
                         const cairn__logbind *b, cairn__err *e);

/* The 32 bytes at p, little-endian. */
void cairn__logbind_put(uint8_t *p, const cairn__logbind *b);
void cairn__logbind_get(const uint8_t *p, cairn__logbind *b);

#endif /* CAIRN_LOGBIND_H */
