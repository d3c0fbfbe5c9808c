/*
 * keyfile.h - KEYS, the key sets a store's writer processes share
 * (format-spec/keys.md).
 *
 * A store checks its content against the memories of its namespace and
 * makes an id no memory has. A writer that has not folded what other
 * processes stored since it last looked answers both from key sets
 * (memkeys.h) instead of folding those records. Kept per process, each of
 * N writers hashes every record the other N - 1 store; kept in this file,
 * the writer whose turn it is adds its own stores' keys and nobody reads
 * another's records again. Only the holder of the writer lock reads or
 * changes the file, so it needs no lock of its own.
 *
 *   off  size  field
 *     0    64  the common file header (filehdr.h), magic "CAIRNKEY";
 *              fields: 16 u64 boot (cairn__boot_id, not 0), 24 store_id[16]
 *              (the MANIFEST's, or zeros), 40 u64 slots (a power of 2,
 *              2^10..2^24), 48..56 reserved (0)
 *    64   544  the sets' counts (cairn__memkeys_core), in the byte order of
 *              the machine, changed in place: base, covered, n, n_ns,
 *              ns_key[32], ns_n[32]
 *   608  3488  reserved (written 0)
 *  4096  8 x slots  content keys, then 8 x slots id keys (0: empty)
 *
 * The file is a cache: bound to one boot of one machine and to one store,
 * and any file that fails a check is made afresh. Pages written through
 * the mapping reach the page cache at once, so a writer killed in its turn
 * leaves them for the next; only a machine crash can tear them, and that
 * starts a new boot.
 */
#ifndef CAIRN_KEYFILE_H
#define CAIRN_KEYFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memkeys.h"
#include "status.h"

#define KEYS_NAME "KEYS"
#define KEYS_MAGIC "CAIRNKEY"
#define KEYS_VERSION 1u
#define KEYS_OFF_BOOT 16u
#define KEYS_OFF_STORE_ID 24u
#define KEYS_STORE_ID_LEN 16u
#define KEYS_OFF_SLOTS 40u
#define KEYS_OFF_RESERVED 48u
#define KEYS_OFF_CORE 64u
#define KEYS_OFF_TABLES 4096u
#define KEYS_SLOTS_MIN (1u << 10)
#define KEYS_SLOTS_MAX (1u << 24)
/* What the engine makes: 262,144 memories at most (half the slots), 8 MiB
 * and 4 KiB on disk. */
#define KEYS_SLOTS (1u << 19)

/* The file's size for `slots` slots a set. */
#define KEYS_FILE_SIZE(slots) ((uint64_t)KEYS_OFF_TABLES + 16u * (uint64_t)(slots))

/* The first KEYS_OFF_TABLES bytes of a file (header and counts) into out. */
void cairn__keyfile_head_encode(uint8_t *out, uint64_t boot, const uint8_t *store_id,
                                uint64_t slots, uint64_t base);

/* Check the file whose first len bytes are buf (len at least
 * KEYS_OFF_TABLES; file_size its size) against this boot, this store
 * (store_id, zeros: any) and a log whose last seq is log_end. *slots: its
 * slots a set. Errors: CAIRN_ECORRUPT (short, header, sum, reserved bytes,
 * another boot or store, slots, size, counts out of range),
 * CAIRN_ECHECKSUM, CAIRN_EVERSION. e names the cause. */
int cairn__keyfile_check(const uint8_t *buf, size_t len, uint64_t file_size, uint64_t boot,
                         const uint8_t *store_id, uint64_t log_end, uint64_t *slots,
                         cairn__err *e);

typedef struct cairn_db cairn_db;

/* A handle's mapping of KEYS. */
typedef struct cairn__keyfile {
    uint8_t *map;  /* NULL: not mapped */
    size_t len;
    uint64_t slots;
    dev_t dev;
    ino_t ino;
    int off;       /* this handle does without the file (no boot id, or
                      the file could not be made): its own sets serve */
} cairn__keyfile;

/* In a turn: KEYS mapped and checked against this boot, this store and a
 * log that ends at log_end. A file missing or failing a check, or any
 * file when renew is set, is replaced by a fresh one whose sets are empty
 * and whose base and covered are fresh_base. CAIRN_OK, or an error after
 * which kf->off is set and the file is not used again by this handle. */
int cairn__keyfile_use(cairn__keyfile *kf, cairn_db *db, uint64_t log_end, uint64_t fresh_base,
                       int renew);

/* Outside a turn (a store's wait): map KEYS ahead, its pages asked for
 * writable, so that the turn finds it mapped (the turn checks it all the
 * same). Best effort: nothing is read or written in the file. */
void cairn__keyfile_premap(cairn__keyfile *kf, cairn_db *db);

/* The mapped file's counts and sets. */
cairn__memkeys_core *cairn__keyfile_core(const cairn__keyfile *kf);
uint64_t *cairn__keyfile_content(const cairn__keyfile *kf);
uint64_t *cairn__keyfile_ids(const cairn__keyfile *kf);

void cairn__keyfile_close(cairn__keyfile *kf);

/* In a turn: unmap KEYS and remove it (a purge: no key of the content it
 * removed may stay). A missing file is no error. */
int cairn__keyfile_remove(cairn__keyfile *kf, cairn_db *db);

#endif /* CAIRN_KEYFILE_H */
