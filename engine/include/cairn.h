/*
 * cairn.h - the one public header of libcairn, an embeddable, append-only,
 * log-structured memory engine for AI agents.
 *
 * A store is a directory. Everything written to it is a record appended to a
 * segmented log (format-spec/). This header is the whole public API; every
 * function returns CAIRN_OK (0) or a negative, stable cairn status code, and
 * the library never prints, exits or aborts.
 *
 * Threads: a cairn_db handle may be used from any number of threads at once.
 * Writes are serialized by one mutex; durability waits (fdatasync) happen
 * outside it, so concurrent writers in `full` mode share one fsync (group
 * commit). Readers never wait for an fsync.
 *
 * Processes: any number of writer handles, in any processes, take turns
 * with the writer lock (an flock on LOCK, held for one commit, roll, seal
 * or checkpoint: format-spec/lock.md), waiting up to busy_timeout_ms; any
 * number of read-only handles, in any process, without the lock. Every
 * call catches up on what other processes wrote.
 *
 * Conventions:
 * - Status: every function that can fail returns CAIRN_OK (0) or a
 *   negative CAIRN_E* code; cairn_strerror() names a code.
 * - Error detail: after a call fails, cairn_errmsg(db) (cairn_mem_errmsg,
 *   cairn_reflex_errmsg for those handles) gives its one-line detail. The
 *   detail is kept per handle and per thread: a failure in another thread,
 *   on the same handle or not, never overwrites it, so any number of
 *   threads may share a handle and each read its own. It stays until the
 *   calling thread's next call on that handle (a thread keeps the details
 *   of the 16 handles it used last). A call without a handle (cairn_open,
 *   cairn_episode_extract) leaves its detail in cairn_errmsg(NULL), and in
 *   the caller's buffer when it takes one. The tool interface
 *   (cairn_session_call) returns each call's error with the call.
 * - Freeing: a string the library returns (char **json_out, char **out)
 *   is freed with cairn_free() (which is free()). A struct or array it
 *   fills is freed with the function named next to its type
 *   (cairn_mem_free, cairn_recall_free, cairn_causal_node_clear, ...);
 *   cairn_record_free takes the handle. Handles are closed with their
 *   _close; every _free, _clear and _close accepts NULL.
 * - Options structs: every struct a caller fills for a call (cairn_options,
 *   cairn_range, the _opts structs, cairn_mem_options,
 *   cairn_episode_query, cairn_pattern_spec) starts with a version and
 *   has an _INIT macro that sets it: declare it with the macro and set
 *   members by name. A version the library does not know (0: a struct not
 *   made by its macro) fails the call with CAIRN_EINVAL; members added
 *   later take their defaults for a caller built with an earlier version.
 * - Allocation: see cairn_allocator for which layers use the allocator
 *   option and why the others do not.
 * - Version: CAIRN_VERSION_NUMBER is the header's, cairn_version_number()
 *   the library's at run time.
 */
#ifndef CAIRN_H
#define CAIRN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CAIRN_VERSION_MAJOR 0
#define CAIRN_VERSION_MINOR 2
#define CAIRN_VERSION_PATCH 0
#define CAIRN_VERSION_STRING "0.2.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if and comparisons. */
#define CAIRN_VERSION_NUMBER \
    (CAIRN_VERSION_MAJOR * 10000 + CAIRN_VERSION_MINOR * 100 + CAIRN_VERSION_PATCH)

/* The version of the library the program runs with (the macros above are
 * the header's it was built with): its string ("0.1.0") and its number
 * (as CAIRN_VERSION_NUMBER). */
const char *cairn_version(void);
int cairn_version_number(void);

/* ---------------------------------------------------------------------------
 * Status codes. Stable: never renumbered. cairn_strerror() names each.
 * ------------------------------------------------------------------------- */
#define CAIRN_OK 0
#define CAIRN_ENOTFOUND (-1)  /* no such record / end of iteration */
#define CAIRN_EEXIST (-2)     /* already exists (e.g. init of an existing store) */
#define CAIRN_EINVAL (-3)     /* invalid argument */
#define CAIRN_ENOMEM (-4)     /* allocation failed */
#define CAIRN_EIO (-5)        /* an I/O call failed (errno in the message) */
#define CAIRN_ECORRUPT (-6)   /* bytes on disk are not a valid cairn structure */
#define CAIRN_ECHECKSUM (-7)  /* a checksum does not match */
#define CAIRN_EVERSION (-8)   /* written by a newer format version */
#define CAIRN_EFULL (-9)      /* no space left on device */
#define CAIRN_ELOCKED (-10)   /* another process holds the writer lock */
#define CAIRN_EPERM (-11)     /* permission denied, or a write on a read-only handle */
#define CAIRN_EUNAVAIL (-12)  /* a needed facility is not available */
#define CAIRN_EDEAD (-13)     /* the handle failed earlier (e.g. fsync error); reopen */
#define CAIRN_EQUERY (-14)    /* invalid query */
#define CAIRN_ETOOBIG (-15)   /* a record would exceed CAIRN_RECORD_MAX */

/* Largest encoded record, header and checksum included (16 MiB). A length
 * field above this on disk is corruption, never an allocation. */
#define CAIRN_RECORD_MAX (16u * 1024u * 1024u)
/* Longest namespace, in bytes. */
#define CAIRN_NS_MAX 255u
/* Size of the buffer cairn_open() fills with a one-line message on failure. */
#define CAIRN_ERRMSG_MAX 256u

/* Static "CAIRN_EXXX: sentence" for a status code; never NULL. */
const char *cairn_strerror(int code);

/* The rule for every text the engine stores (README "Text"): valid UTF-8
 * (no overlong form, no UTF-16 surrogate, nothing past U+10FFFF) without a
 * NUL byte. The functions that take text check it themselves; this is for
 * a caller that transforms text before passing it on (the `cairn` tool
 * parses and rewrites JSON). json 1: text is a JSON document, whose bytes
 * follow the rule and none of whose strings may hold the escape \u0000
 * (decoded, it would end the string). Returns CAIRN_OK, or CAIRN_EINVAL
 * with a one-line reason in err (errlen bytes; may be NULL) naming where:
 * for JSON the member path ("decisions[2].chosen: holds a NUL (\u0000)"),
 * otherwise the byte offset. Errors: CAIRN_EINVAL. */
int cairn_text_check(const char *text, size_t len, int json, char *err, size_t errlen);

/* ---------------------------------------------------------------------------
 * Opening a store.
 * ------------------------------------------------------------------------- */
typedef struct cairn_db cairn_db;

typedef enum cairn_durability {
    CAIRN_DURABILITY_STORED = -1, /* open: use the mode stored in the store */
    CAIRN_DURABILITY_NONE = 0,    /* the active segment is fsynced only at close (closed
                                     segments in the background, before sealing) */
    CAIRN_DURABILITY_BATCH = 1,   /* fsync every batch_ms (background thread) */
    CAIRN_DURABILITY_FULL = 2     /* an append returns after fdatasync (group commit) */
} cairn_durability;

/* A pluggable allocator for the log layer: the handle, its write buffer,
 * segment record indexes, readers and sealing buffers go through it.
 * These allocate with malloc/realloc/free instead:
 * - everything handed to the caller (memories, recall hits, JSON texts,
 *   patterns, nodes): the caller frees it with cairn_free() or the _free
 *   functions, long after the handle that made it may be closed;
 * - cJSON's parse trees (the memory, reflexion and tool-interface layers
 *   read and write JSON with cJSON), whose hooks are global to the
 *   process, not per handle;
 * - zstd's compression and decompression contexts;
 * - the memory, vector, reflexion and graph layers' own state (their RAM
 *   indexes and maps), which have not been routed through it. */
typedef struct cairn_allocator {
    void *(*malloc_fn)(void *user, size_t size);
    void *(*realloc_fn)(void *user, void *ptr, size_t size);
    void (*free_fn)(void *user, void *ptr);
    void *user;
} cairn_allocator;

struct cairn_io; /* the I/O table, cairn_sys.h; NULL = the real system calls */

/* 2: cairn_io has `reserve`. A caller built with version 1 still opens; an
 * I/O table it passes is read without that member (no reservations).
 * 3: busy_timeout_ms. 4: max_memories. 5: retain. A caller built with an
 * earlier version still opens; the members it lacks take their defaults. */
#define CAIRN_OPTIONS_VERSION 5
typedef struct cairn_options {
    unsigned version;            /* CAIRN_OPTIONS_VERSION */
    int read_only;               /* 1: no lock, no writes, no recovery writes */
    int create;                  /* 1: create the store if it does not exist */
    cairn_durability durability; /* at creation: stored; at open: overrides for this handle */
    uint32_t batch_ms;           /* 0 = stored (default 50): batch fsync / buffer flush period */
    uint64_t segment_size;       /* 0 = stored (default 64 MiB): roll the active segment past
                                    this; a writer reserves the segment's disk space up to it
                                    (cairn_io.reserve) and gives back the rest at roll/close */
    int background;              /* 1: two background threads, one flushes and syncs,
                                    one seals (at nice 10 on Linux);
                                    0: all of it happens inline in the calling thread;
                                    read-only: 1 lets a long fold (thousands of memories
                                    past the newest index file) index text on one thread */
    const cairn_allocator *allocator; /* NULL = malloc/realloc/free */
    const struct cairn_io *io;        /* NULL = real system calls (tests inject faults) */
    /* Since version 3. How long a write waits for the writer lock while
     * another process holds it, in ms (0 = 5000); then CAIRN_ELOCKED. */
    uint32_t busy_timeout_ms;
    /* Since version 4. At creation: the store's max_memories setting, in
     * the first MANIFEST (0 = the default, 10000; CAIRN_NO_LIMIT = none).
     * Ignored when the store exists: cairn_config_set_max_memories. */
    uint64_t max_memories;
    /* Since version 5. At creation: the store's retention policy as
     * cairn_retain_parse reads it (NULL = "all"); an invalid one fails the
     * open with CAIRN_EINVAL. Ignored when the store exists:
     * cairn_config_set_retain. */
    const char *retain;
} cairn_options;

#define CAIRN_NO_LIMIT UINT64_MAX
#define CAIRN_OPTIONS_INIT \
    { CAIRN_OPTIONS_VERSION, 0, 0, CAIRN_DURABILITY_STORED, 0, 0, 1, NULL, NULL, 0, 0, NULL }
#define CAIRN_BUSY_TIMEOUT_DEFAULT 5000u

/* Open (or with opts->create, create) the store in directory `path`.
 * On success *out owns the handle; release it with cairn_close().
 * On failure *out is NULL and, if `err` is not NULL, a one-line message is
 * written to err (at most errlen bytes, NUL-terminated).
 * Errors: CAIRN_EINVAL (bad options), CAIRN_ENOTFOUND (no store and no create),
 * CAIRN_ELOCKED (a writer: another process held the writer lock for the whole
 * busy timeout; the message names its pid), CAIRN_EPERM,
 * CAIRN_ECORRUPT / CAIRN_ECHECKSUM / CAIRN_EVERSION (manifest or segment),
 * CAIRN_EIO, CAIRN_EFULL, CAIRN_ENOMEM. */
int cairn_open(cairn_db **out, const char *path, const cairn_options *opts, char *err,
               size_t errlen);

/* Flush, sync (in every mode), stop the background threads, seal segments
 * still waiting for it, and free the handle. A writer handle holds the
 * store's writer lock only for a turn (a commit, a group commit, a roll, a
 * seal, a checkpoint: format-spec/lock.md), so any write call may wait up
 * to busy_timeout_ms for another process's turn and fail with
 * CAIRN_ELOCKED; every call first catches up on what other processes
 * wrote. Accepts NULL.
 * Returns the first error met while flushing, or CAIRN_EDEAD if the handle
 * had died earlier (records acknowledged in none/batch mode before the
 * failure may be lost; reopen to see what was kept); if background work
 * killed it and no call has reported that yet, its status instead (a full
 * disk: CAIRN_EFULL). The handle is freed
 * regardless. A failure to seal here is not an error: nothing is lost and
 * the next open seals. */
int cairn_close(cairn_db *db);

/* The one-line detail of the calling thread's last failed call on this
 * handle ("" if none): per thread, so another thread's failure never
 * replaces it (see "Conventions" above). db NULL: the detail of the
 * thread's last failed call that has no handle to keep it (cairn_open,
 * cairn_episode_extract). */
const char *cairn_errmsg(const cairn_db *db);

/* ---------------------------------------------------------------------------
 * Records and appending.
 * ------------------------------------------------------------------------- */

/* Record types. 1..0x7fff are the engine's; 0x8000..0xffff are free for
 * embedders. cairn_record_type_name() names the known ones. */
#define CAIRN_REC_EVENT 1u /* an agent event, appended by `cairn log` */
/* Memories (format-spec/memory.md); written by the cairn_mem_* calls. */
#define CAIRN_REC_MEMORY 2u        /* "memory": a memory stored */
#define CAIRN_REC_MEMORY_UPDATE 3u /* "memory.update": fields changed */
#define CAIRN_REC_MEMORY_DELETE 4u /* "memory.delete": a tombstone */
#define CAIRN_REC_MEMORY_ACCESS 5u /* "memory.access": accesses of memories, folded from ACCESS */
#define CAIRN_REC_MEMORY_CLEAR 6u  /* "memory.clear": a namespace, or all, cleared */
/* Reflexion (format-spec/reflexion.md); written by the cairn_reflex_* calls. */
#define CAIRN_REC_EPISODE 7u       /* "episode": an episode stored or replaced */
#define CAIRN_REC_CAUSAL_NODE 8u   /* "causal.node": a node added (or seen again) */
#define CAIRN_REC_CAUSAL_EDGE 9u   /* "causal.edge": an edge added (or seen again) */
#define CAIRN_REC_PATTERN 10u      /* "pattern": a pattern added (or used again) */
#define CAIRN_REC_CAUSAL_UPDATE 11u /* "causal.update": episodes folded into the graph */
#define CAIRN_REC_COMPACTED 12u    /* "log.compacted": records compaction dropped
                                      (a hole; format-spec/compaction.md) */
#define CAIRN_REC_MEMORY_PURGE 13u /* "memory.purge": a memory's records purged */
#define CAIRN_REC_USER_MIN 0x8000u

#define CAIRN_TYPE_NAME_MAX 64

/* Name of a record type ("event", ...) or NULL if the engine does not know it. */
const char *cairn_record_type_name(uint16_t type);

/* Named record types of the store (an embedder's: `cairn log --type
 * tool_call`), kept in the MANIFEST. Register name (1..64 of [a-z0-9_.-],
 * a letter first; not a name of the engine's types): *type gets its
 * number, 0x8000 and up in the order names were registered; a name
 * registered before gets the same number again. Numbers are never reused
 * or renamed. Errors: CAIRN_EINVAL (a bad name, or 4096 names already),
 * CAIRN_EPERM (read-only), the MANIFEST write's. */
int cairn_type_register(cairn_db *db, const char *name, uint16_t *type);

/* The number of a type name: the engine's (cairn_record_type_parse) or
 * one registered in the store (read-only handles see those registered by
 * then). Errors: CAIRN_ENOTFOUND (no such name), CAIRN_EINVAL (not a name
 * or a number). A decimal number 1..65535 is taken as is. */
int cairn_type_lookup(cairn_db *db, const char *name, uint16_t *type);

/* The name of type into buf (cap bytes; CAIRN_TYPE_NAME_MAX + 1 suffice):
 * the engine's or the store's. Returns 1, or 0 when the type has no name
 * (buf gets its number). */
int cairn_type_name(cairn_db *db, uint16_t type, char *buf, size_t cap);
/* Parse a type name or a decimal number (1..65535) into *type.
 * Errors: CAIRN_EINVAL. */
int cairn_record_type_parse(const char *name, uint16_t *type);

/* What the caller appends. The engine copies the bytes; it does not parse the
 * payload (callers that promise JSON validate it; the tool does). */
typedef struct cairn_entry {
    uint16_t type;
    const char *ns;    /* namespace; NULL = "" */
    size_t ns_len;     /* <= CAIRN_NS_MAX */
    const char *json;  /* payload text (JSON by convention); may be NULL if json_len 0 */
    size_t json_len;
    const void *bin;   /* optional binary trailer (vectors), may be NULL */
    size_t bin_len;
} cairn_entry;

/* A record as read back. Pointers are borrowed: valid until the next call on
 * the iterator (or until cairn_record_free() for cairn_get()). */
typedef struct cairn_record {
    uint64_t seq;     /* sequence number, > 0, strictly increasing */
    int64_t ts_ms;    /* commit time, ms since the Unix epoch, UTC; non-decreasing */
    uint16_t type;
    const char *ns;   /* not NUL-terminated */
    size_t ns_len;
    const char *json; /* not NUL-terminated */
    size_t json_len;
    const void *bin;
    size_t bin_len;
} cairn_record;

/* Append one record; *seq_out (may be NULL) gets its sequence number.
 * When it returns, the record is committed as the durability mode promises:
 * `full`: on stable storage; `batch`/`none`: in the handle's write buffer,
 * visible to this handle's readers at once and written to the file within
 * batch_ms (see README "Durability").
 * Errors: CAIRN_EINVAL, CAIRN_ETOOBIG, CAIRN_EPERM (read-only), CAIRN_EDEAD,
 * CAIRN_EIO, CAIRN_EFULL, CAIRN_ENOMEM. After CAIRN_EIO/EFULL from a sync
 * the handle is dead (CAIRN_EDEAD from then on): reopen the store. When
 * work no call waits for killed the handle (a write or sync of the
 * background threads, a seal after a roll or at open, a checkpoint at
 * close), the first call to find it dead returns that failure's status and
 * message (a full disk: CAIRN_EFULL, "... the disk is full ..."), and
 * CAIRN_EDEAD from then on. */
int cairn_append(cairn_db *db, const cairn_entry *entry, uint64_t *seq_out);

/* Append n records as one commit (one write, one fsync in `full`). They get
 * consecutive sequence numbers starting at *first_seq_out. All or nothing:
 * on a validation error none is appended. Errors: as cairn_append(). */
int cairn_append_batch(cairn_db *db, const cairn_entry *entries, size_t n,
                       uint64_t *first_seq_out);

/* Write the handle's buffer to the segment file (visible to other processes,
 * safe from a crash of this process), without fsync. */
int cairn_flush(cairn_db *db);

/* Flush and fdatasync: every record appended so far is on stable storage.
 * An fsync failure is fatal for the handle (CAIRN_EIO, then CAIRN_EDEAD). */
int cairn_sync(cairn_db *db);

/* Seal every closed segment now (what the background thread does). */
int cairn_seal(cairn_db *db);

/* Close the active segment now and start a new one (normally done when it
 * reaches segment_size); the closed one is sealed in the background (or
 * inline with background = 0). No-op on an empty active segment. */
int cairn_roll(cairn_db *db);

/* ---------------------------------------------------------------------------
 * Reading.
 * ------------------------------------------------------------------------- */
typedef struct cairn_iter cairn_iter;

#define CAIRN_RANGE_VERSION 1
typedef struct cairn_range {
    unsigned version;  /* CAIRN_RANGE_VERSION */
    uint64_t seq_from; /* first sequence number (inclusive) */
    uint64_t seq_to;   /* last sequence number (inclusive) */
    int64_t ts_from;   /* first timestamp, ms (inclusive) */
    int64_t ts_to;     /* last timestamp, ms (inclusive) */
    int type;          /* only this record type; -1 = all */
} cairn_range;

#define CAIRN_RANGE_INIT \
    { CAIRN_RANGE_VERSION, 0, UINT64_MAX, INT64_MIN, INT64_MAX, -1 }

/* Open a forward iterator over the records in `range` (NULL = everything)
 * as of now: it sees every record committed before this call and none
 * after. A read-only handle re-reads the manifest and the active segment's
 * tail first, so it sees what the writer has committed since.
 * Errors: CAIRN_EINVAL, CAIRN_ENOMEM, CAIRN_EIO, CAIRN_ECORRUPT. */
int cairn_iter_open(cairn_db *db, const cairn_range *range, cairn_iter **out);

/* Next record into *rec (pointers valid until the next call on `it`).
 * Returns CAIRN_OK, CAIRN_ENOTFOUND at the end, or an error
 * (CAIRN_ECHECKSUM / CAIRN_ECORRUPT naming file and offset in the handle's
 * message, CAIRN_EIO, CAIRN_ENOMEM). */
int cairn_iter_next(cairn_iter *it, cairn_record *rec);

/* Free an iterator; accepts NULL. */
void cairn_iter_close(cairn_iter *it);

/* ---- following the log ----------------------------------------------------
 * A follower hands out the records of a range as they are committed, in
 * this process or another (`cairn dump --follow`): first those committed
 * before it opened, then each new one, exactly once and in seq order,
 * across segment rolls, sealing and compaction. It waits for new records
 * with an inotify watch of the store's directory (Linux; elsewhere it
 * sleeps 50 ms between looks), never by polling the files. A writer's
 * records reach it when the writer flushes them: at once in `full` mode,
 * within batch_ms in `batch` and `none`. */
typedef struct cairn_follow cairn_follow;

/* Follow range (NULL: every record; seq_from 0 = from the first) on db (a
 * read-only handle is enough). Errors: CAIRN_EINVAL, CAIRN_ENOMEM. */
int cairn_follow_open(cairn_db *db, const cairn_range *range, cairn_follow **out);

/* The next record into *rec (its pointers valid until the next call),
 * waiting up to timeout_ms for one to be committed (-1: as long as it
 * takes; 0: not at all). A compaction hole is handed out once and stands
 * for every seq up to its upto. CAIRN_ENOTFOUND when none came in time, a
 * signal interrupted the wait (call again), or none ever will (the range's
 * seq_to is passed, or its ts_to: the log's newest record is later).
 * Errors: CAIRN_EIO (the store's directory was moved away or removed), and
 * cairn_iter_next's. */
int cairn_follow_next(cairn_follow *f, cairn_record *rec, int timeout_ms);

/* 1 when no record of the range can come any more (past seq_to or
 * ts_to), 0 while one may. */
int cairn_follow_ended(const cairn_follow *f);

/* A descriptor that becomes readable when the store may have new records
 * (for a poll loop of the caller's own), or -1 without inotify. */
int cairn_follow_fd(const cairn_follow *f);

/* Close; accepts NULL. */
void cairn_follow_close(cairn_follow *f);

/* Read one record by sequence number in O(log n) (binary search over the
 * manifest, the sealed block index, or the active segment's offsets).
 * On success *out owns a copy; free it with cairn_record_free().
 * Errors: CAIRN_ENOTFOUND, CAIRN_ECHECKSUM, CAIRN_ECORRUPT, CAIRN_EIO,
 * CAIRN_ENOMEM. */
int cairn_get(cairn_db *db, uint64_t seq, cairn_record **out);
void cairn_record_free(cairn_db *db, cairn_record *rec);

/* ---------------------------------------------------------------------------
 * Stats and verification.
 * ------------------------------------------------------------------------- */
typedef struct cairn_stats {
    uint64_t records;          /* records in the log */
    uint64_t first_seq;        /* 0 if empty */
    uint64_t last_seq;         /* 0 if empty */
    uint64_t segments_active;  /* 1 (the active segment), or 0 when empty */
    uint64_t segments_closed;  /* full, awaiting sealing */
    uint64_t segments_sealed;
    uint64_t bytes_on_disk;    /* all files of the store (their sizes: space a writer has
                                  reserved past the active segment's end is not counted) */
    uint64_t log_bytes;        /* encoded records, uncompressed */
    uint64_t sealed_raw_bytes; /* encoded records in sealed segments */
    uint64_t sealed_bytes;     /* sealed segment files on disk */
    cairn_durability durability;
    uint32_t batch_ms;
    uint64_t segment_size;
    uint64_t generation;       /* manifest generation */
    uint64_t recovered_torn_bytes;      /* this handle's open truncated a torn tail this long */
    uint64_t recovered_set_aside_bytes; /* this handle's open found damage with valid records
                                           after it and moved these bytes to a
                                           <id>-<offset>.damaged file (cairn_verify reports
                                           it); their sequence numbers are never reused */
    uint64_t recovered_lost_first;      /* this handle's open found the log ending before a seq */
    uint64_t recovered_lost_last;       /* the MANIFEST recorded as durable: records first..last
                                           are gone (0, 0: none). A writer's open retires their
                                           numbers (the next record gets last + 1); cairn_verify
                                           reports the loss until a writer has done so */
    uint64_t lost_total;                /* records writers found lost that way and retired,
                                           over the store's life (the MANIFEST keeps it) */
    uint8_t store_id[16];               /* random, given when the store was created; derived
                                           files carry it. All zero for a store whose MANIFEST
                                           is of version 1 until a writer opens it */
} cairn_stats;

/* Errors: CAIRN_EIO, CAIRN_ENOMEM. */
int cairn_stats_get(cairn_db *db, cairn_stats *out);

/* ---------------------------------------------------------------------------
 * Store settings, kept in the MANIFEST (format-spec/manifest.md).
 * ------------------------------------------------------------------------- */
/* The retention policy (format-spec/compaction.md): what compaction keeps.
 * Memories: CAIRN_RETAIN_ALL keeps every record, for audits and replay;
 * CAIRN_RETAIN_LIVE drops the records of memories that are no longer live
 * (removed, forgotten, pruned, merged away, cleared) once they went more
 * than grace_ms ago: restore brings such a memory back until then, not
 * after. Events (records of `cairn log`, CAIRN_REC_EVENT): with
 * events_max_age_ms, those older are dropped; with events_max_bytes, the
 * oldest of a namespace are dropped while its events take more; 0: no
 * limit. */
#define CAIRN_RETAIN_ALL 0u
#define CAIRN_RETAIN_LIVE 1u
#define CAIRN_RETAIN_GRACE_DEFAULT (7ull * 86400000ull) /* 7 days, in ms */
#define CAIRN_RETAIN_GRACE_MAX (1ull << 53)            /* also the most for the event limits */

typedef struct cairn_retention {
    unsigned memories;           /* CAIRN_RETAIN_ALL or CAIRN_RETAIN_LIVE */
    uint64_t grace_ms;           /* CAIRN_RETAIN_LIVE: how long after they went */
    uint64_t events_max_age_ms;  /* 0: no age limit */
    uint64_t events_max_bytes;   /* per namespace; 0: no size limit */
} cairn_retention;

/* Parse a policy as the CLI takes it: a comma list of "all" or
 * "live[:GRACE]" (GRACE a number and ms, s, m, h or d, or "0"; "live" is
 * live:7d) and at most one each of "events:AGE" (as GRACE, not 0) and
 * "events:SIZE" (a number and B, KiB, MiB, GiB or TiB, not 0). Without a
 * memory part, memories are "all". CAIRN_EINVAL for anything else. */
int cairn_retain_parse(const char *text, cairn_retention *out);
/* The policy as text in the form cairn_retain_parse reads back
 * ("all", "live:7d", "live:0,events:30d,events:10GiB"); cap >= 96 is
 * always enough. */
void cairn_retain_format(const cairn_retention *r, char *out, size_t cap);

typedef struct cairn_config {
    cairn_durability durability; /* given at creation; a handle's options may
                                    override it for that handle (cairn_stats
                                    says what a handle uses) */
    uint32_t batch_ms;           /* likewise */
    uint64_t segment_size;       /* likewise */
    uint64_t max_memories;       /* live memories per namespace the memory engine
                                    keeps (cairn_mem_store, cairn_mem_import);
                                    0 = no limit. 10000 in a new store, and in a
                                    store whose MANIFEST predates the setting */
    cairn_retention retain;      /* what compaction keeps (all, in a new store
                                    and one whose MANIFEST predates it) */
    int labels_fold_case;        /* 1: causal node and pattern labels that differ
                                    only in case are one (a store made by this
                                    release); 0: byte for byte (a store whose
                                    MANIFEST predates the setting). Fixed at
                                    creation: node ids come from the labels */
    uint32_t reflect_threshold;  /* the cognitive tiers: importance summed since
                                    the last reflection at which one is due (150) */
    uint32_t core_budget;        /* tokens the core memory holds at most (8000) */
    uint32_t core_section_budget; /* tokens a core section holds at most (2000) */
} cairn_config;



/* The store's settings as stored (a read-only handle reads the MANIFEST
 * again first, so it sees a change another process made).
 * Errors: CAIRN_EIO, CAIRN_ECORRUPT, CAIRN_ENOMEM (from that re-read; *out
 * then holds the settings the handle saw before). */
int cairn_config_get(cairn_db *db, cairn_config *out);

/* Change the cognitive tiers' settings (0 leaves one as it is): the
 * reflection threshold and the core and section token budgets, each
 * 1..100000000, a section's budget at most the core's. A new MANIFEST is
 * written in the writer's turn; other handles see it at their next call.
 * Budgets apply to changes from then on (a core already past a lowered
 * budget stays, and takes no more). Errors: CAIRN_EINVAL, CAIRN_EPERM,
 * the MANIFEST write's. */
int cairn_config_set_tiers(cairn_db *db, uint32_t reflect_threshold, uint32_t core_budget,
                           uint32_t core_section_budget);

/* Change the store's max_memories (0 = no limit): a new MANIFEST is
 * written (nothing when it holds n already). It applies from the next
 * cairn_mem_store / cairn_mem_import on, in this process and others; it
 * prunes nothing by itself (a namespace holding more is pruned back to n
 * by its next store, which reports it). Errors: CAIRN_EPERM (read-only
 * handle), CAIRN_EDEAD, CAIRN_EIO, CAIRN_EFULL, CAIRN_ENOMEM; after a
 * failed write the handle keeps the old value and stays usable. */
int cairn_config_set_max_memories(cairn_db *db, uint64_t n);

/* Change the store's retention policy (memories CAIRN_RETAIN_ALL with
 * grace 0, or CAIRN_RETAIN_LIVE; every number up to
 * CAIRN_RETAIN_GRACE_MAX): a new MANIFEST, as above. It applies from the
 * next compaction on; nothing is dropped by the change itself. Errors:
 * CAIRN_EINVAL, and those of cairn_config_set_max_memories. */
int cairn_config_set_retain(cairn_db *db, const cairn_retention *r);

/* Called by cairn_verify() once per problem. `file` is relative to the store
 * directory; `offset` is the byte offset in it. */
typedef void (*cairn_verify_fn)(void *user, const char *file, uint64_t offset, int code,
                                const char *message);

/* Read every file of the store and check every checksum and structure.
 * Calls fn for each problem; *problems_out (may be NULL) gets their count.
 * Returns CAIRN_OK when the check ran (whatever it found) or an error that
 * stopped it (CAIRN_ENOMEM, CAIRN_EIO on the directory). A torn tail of the
 * active segment is a problem unless a writer holds the lock (then the
 * bytes may be in flight). */
int cairn_verify(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems_out);

/* The log's hash chain (format-spec/chain.md): a SHA-256 value every
 * record folds into, in seq order. The head names a history: kept
 * elsewhere (a ticket, a transparency log, a signed note), it lets
 * cairn_verify_head prove later that the store still holds exactly that
 * history up to its seq. */
#define CAIRN_HASH_LEN 32
typedef struct cairn_head {
    uint64_t seq;                 /* the last seq the chain covers; 0: no record */
    uint8_t hash[CAIRN_HASH_LEN]; /* the chain's value after it */
} cairn_head;

/* The head now: every record the log holds (a writer's handle writes its
 * buffered records first). Reads the segments not sealed yet, whose
 * values the MANIFEST does not keep, not the whole log. CAIRN_ECORRUPT
 * when a segment does not read as the MANIFEST says (run cairn_verify). */
int cairn_head_get(cairn_db *db, cairn_head *out);

/* What cairn_verify_head found. */
typedef struct cairn_verify_report {
    uint64_t problems;   /* every problem (fn got each one) */
    uint64_t first_bad;  /* the first seq known to differ; 0: none found, or not known */
    int head_proven;     /* want given: the chain at want->seq is want->hash, the log
                            reaches it, no hole before it broke the chain, and no
                            segment holding seqs up to it has another problem (a
                            damaged structure can read as another history than the
                            one hashed; a torn tail after want->seq cannot) */
    uint64_t holes;      /* holes of compactions (at or before want->seq) the chain went
                            across as they say: their chain_in held, and the records
                            they stand for are gone (a purge's holes are checked
                            through their records' digests and are not counted) */
    uint64_t hole_seqs;  /* the seqs those holes stand for */
} cairn_verify_report;

/* cairn_verify, and the hash chain recomputed from the first record:
 * compared with the value the MANIFEST keeps for each sealed segment, with
 * every hole's chain_in and, when want is not NULL, with want->hash at
 * want->seq (the log must reach want->seq: a log cut before it is a
 * problem; seq 0 with the zero hash is the empty history). */
int cairn_verify_head(cairn_db *db, const cairn_head *want, cairn_verify_fn fn, void *user,
                      cairn_verify_report *out);

/* What cairn_replay wrote. */
typedef struct cairn_replay_report {
    uint64_t seq;        /* the copy's last seq */
    uint64_t segments;   /* segment files copied or cut */
    uint64_t bytes;      /* bytes of records in them */
    cairn_head head;     /* the copy's head: the source's chain at seq */
} cairn_replay_report;

/* Write a new store in dir (made, or empty) holding this store's log up to
 * seq to_seq, byte for byte (seqs, times, salts: the same hash chain), then
 * check it: its head must be this store's chain at to_seq. Derived files
 * are not copied (the copy's first open folds them from its log), nor
 * ACCESS (access counts no record holds). Settings and named types are the
 * store's now. Errors: CAIRN_EINVAL (to_seq 0), CAIRN_EEXIST (dir not
 * empty), CAIRN_ENOTFOUND (to_seq past the log's end, a retired number,
 * inside a hole a compaction left, or before what a compaction dropped:
 * the message says which), CAIRN_ECORRUPT (the copy does not check; it is
 * left for inspection), CAIRN_EIO (what was written is removed). */
int cairn_replay(cairn_db *db, uint64_t to_seq, const char *dir, cairn_replay_report *out);

/* cairn_replay with flags. CAIRN_REPLAY_VIEW: a view for reading the store
 * as it was at to_seq (`--as-of`), thrown away after: the files it takes
 * whole are hard links where dir is on the same file system (sealed and
 * closed segments, and the index files that cover at most to_seq, so its
 * first open folds from them), it keeps this store's id, it is not checked
 * whole and its report has no head. Both refuse (CAIRN_ENOTFOUND) a to_seq
 * below the highest seq a compaction dropped of records folds read (the
 * records of memories gone since, and their going): the log no longer
 * tells that state. */
#define CAIRN_REPLAY_VIEW 1u
int cairn_replay_ex(cairn_db *db, uint64_t to_seq, const char *dir, unsigned flags,
                    cairn_replay_report *out);

/* The newest seq whose record's time is at or before ts_ms: *seq_out (0
 * when the log's first record is later). CAIRN_ENOMEM, CAIRN_EIO. */
int cairn_seq_at_time(cairn_db *db, int64_t ts_ms, uint64_t *seq_out);

/* Called by cairn_temp_files() once per temporary file. `file` is relative
 * to the store directory, `bytes` its size; `in_flight` is 1 when a writer
 * holds the lock (it may be writing the file right now), 0 when none does
 * (the file is a leftover). */
typedef void (*cairn_temp_fn)(void *user, const char *file, uint64_t bytes, int in_flight);

/* List the store's temporary files: MANIFEST.tmp, <id>.seg.tmp and the
 * memory index's and graph file's mem-*.cmx.tmp and graph-*.cgx.tmp. The
 * writer writes each and renames it into place; one left by a crash (a
 * checkpoint killed midway leaves one as large as the index) or a failed
 * write is never read, only wastes space, and the next writer open
 * removes it. They are not damage: cairn_verify does not count them.
 * Calls fn (may be NULL) per file; *count_out (may be NULL) gets their
 * number. Never modifies the store. Errors: CAIRN_EIO (the directory
 * cannot be read). */
int cairn_temp_files(cairn_db *db, cairn_temp_fn fn, void *user, uint64_t *count_out);

/* ---------------------------------------------------------------------------
 * Memories (engine/memory): store, get, update, delete and recall, over the
 * log. A cairn_mem reads every memory record of the store when it opens and
 * then keeps its state (and a BM25 text index per namespace) in RAM; every
 * change is a record appended first, so the log alone rebuilds it.
 * A cairn_mem is safe to use from several threads (one mutex); a memory
 * stored by one call is found by the next, from any thread. Only one
 * cairn_mem per writable cairn_db.
 * ------------------------------------------------------------------------- */
typedef struct cairn_mem cairn_mem;

#define CAIRN_MEM_ID_MAX 32   /* ids: 1..32 of [A-Za-z0-9_.-] */

#define CAIRN_MEM_OPTIONS_VERSION 1

/* Hybrid recall's fusion of the two rankings (README "Hybrid recall"). */
typedef enum cairn_fusion {
    CAIRN_FUSION_SCORE = 0,    /* normalized scores: (1-w) bm25 / best bm25 + w x the
                                  similarity scaled to 0..1 over the candidates (min-max);
                                  a memory BM25 did not find ranks below every one it did */
    CAIRN_FUSION_RRF = 1       /* reciprocal rank: 1/(60+lexical rank) + w/(60+semantic rank) */
} cairn_fusion;

typedef struct cairn_mem_options {
    unsigned version;          /* CAIRN_MEM_OPTIONS_VERSION */
    const char *stemmer;       /* NULL = "english"; "none"; any Snowball name */
    double half_life_days;     /* importance and recency decay; 0 = 30 */
    /* Ranking weights; all four 0 = the defaults 0.5, 0.3, 0.2, 0.0. */
    double w_relevance, w_importance, w_recency, w_access;
    double max_retention_days; /* forget's default max age; 0 = 90 */
    uint64_t max_memories;     /* 0 (the default) = the store's setting, read at each
                                  store and import (cairn_config_get: 10000 unless
                                  changed; 0 there = no limit). Non-zero: this handle's
                                  own limit per namespace in place of it, for this
                                  handle only and never written to the store (tests,
                                  benchmarks); the setting is the way to change it */
    cairn_fusion fusion;       /* how hybrid recall fuses BM25 and vectors */
    double semantic_weight;    /* the vector side's weight w in the fusion, 0..1; 0 = the
                                  default: 1 for RRF; for score fusion 0, so similarity
                                  only ranks what BM25 did not find (README "Hybrid
                                  recall": measured with the built-in embedder; a real
                                  model may want 0.3..0.5) */
} cairn_mem_options;

#define CAIRN_MEM_OPTIONS_INIT { CAIRN_MEM_OPTIONS_VERSION, NULL, 0, 0, 0, 0, 0, 0, 0, CAIRN_FUSION_SCORE, 0 }

/* A memory as returned (a copy the caller owns: cairn_mem_free()). Strings
 * are NUL-terminated. Times are ms since the epoch, UTC. */
typedef struct cairn_memory {
    char id[CAIRN_MEM_ID_MAX + 1];
    char *ns;                  /* namespace ("" = default) */
    char *content;
    char *category;
    char *metadata;            /* JSON object text, "{}" if none */
    double importance;         /* as stored, 0..1 */
    int64_t created_at;
    int64_t accessed_at;
    uint64_t access_count;
    int64_t expires_at;        /* 0 = never */
    uint64_t seq;              /* the log record that stored it */
} cairn_memory;

/* Open the memory engine over db (read-only handles work for get and
 * recall; recall then still records its accesses, in the side file ACCESS:
 * the one file a read-only handle writes, besides removing a memory index
 * file it finds damaged). Replays every memory record;
 * a record that does not decode is skipped and counted
 * (cairn_mem_skipped()). Errors: CAIRN_EINVAL (options, stemmer),
 * CAIRN_ENOMEM, CAIRN_EIO, CAIRN_ECORRUPT, CAIRN_ECHECKSUM (from the log). */
int cairn_mem_open(cairn_db *db, const cairn_mem_options *opts, cairn_mem **out);

/* Close (the db stays open). Accepts NULL. */
void cairn_mem_close(cairn_mem *m);

/* Memory records replay skipped: their payload did not decode, they could
 * not apply (an unknown id, a second live one), or they belong to a commit
 * that is not whole in the log. */
uint64_t cairn_mem_skipped(const cairn_mem *m);

/* Of those, the records of commits of several records (an import, a
 * forget) that are not whole in the log: a crash or a full disk cut the
 * commit short, and none of it is applied (format-spec/record.md, "Commits
 * of several records"). Counted by this handle's replay since it opened or
 * wrote its last memory index file (the file keeps them in the skipped
 * count only). */
uint64_t cairn_mem_unfinished(const cairn_mem *m);

/* Accesses this handle's recalls could not record in the store's side
 * file ACCESS since it opened (a read-only file system, no permission to
 * write the file or create it, a damaged file before a writer replaces it:
 * README "Access statistics"). The recalls themselves succeeded; only
 * their memories' accessCount and accessedAt did not move. */
uint64_t cairn_mem_access_unrecorded(cairn_mem *m);

/* ---- vectors ------------------------------------------------------------
 * A memory may carry a vector (an embedding of its content) from one
 * embedder, named and of one dimension. The store holds vectors of one
 * embedder only: the first vector stored fixes it (it is in every memory
 * record that carries one, and in the index file), and a vector of another
 * name or dimension is refused, never mixed. Vectors are stored as given
 * (f32, in the record's binary trailer) and compared by cosine similarity.
 * ------------------------------------------------------------------------- */
#define CAIRN_EMBEDDER_NAME_MAX 63

typedef struct cairn_embedder {
    const char *name;          /* identity, 1..63 bytes: vectors of another are refused */
    uint32_t dim;              /* 1..65536 */
    void *user;
    /* Embed one text (UTF-8, len bytes) into out[0..dim). Return 0, or
     * non-zero with a one-line reason in err (CAIRN_ERRMSG_MAX bytes).
     * May be NULL when embed_batch is set. */
    int (*embed)(void *user, const char *text, size_t len, float *out, char *err);
    /* Embed n texts into out[i * dim ...]. May be NULL (embed is called
     * n times). Either both callbacks NULL: the handle only knows the
     * identity, and vectors come with each call (store opts, query_vector). */
    int (*embed_batch)(void *user, const char *const *texts, const size_t *lens, size_t n,
                       float *out, char *err);
    /* Cosine similarity below which a memory is no semantic match for a
     * query (it depends on the model: unrelated texts score about 0 with
     * the built-in embedder, much higher with many neural models). */
    double min_similarity;
} cairn_embedder;

/* Use e (copied; e->user must outlive the handle) for the memories stored
 * and the queries recalled from now on; NULL: none (lexical only). The
 * callbacks run with the handle's lock held, in the calling thread.
 * Errors: CAIRN_EINVAL (bad name or dim; or the store holds vectors of
 * another embedder or dimension: the message names both). */
int cairn_mem_set_embedder(cairn_mem *m, const cairn_embedder *e);

/* The store's embedder as its vectors say (name "" and dim 0 when it holds
 * none), and how many live memories have a vector. Any argument may be
 * NULL; name gets CAIRN_EMBEDDER_NAME_MAX + 1 bytes. */
void cairn_mem_vectors(cairn_mem *m, char *name, uint32_t *dim, uint64_t *vectors);

/* The built-in embedder: offline, deterministic, no model (README
 * "Vectors": hashed word stems and character trigrams; it tolerates
 * misspellings and word forms, not synonyms). dim 0 = 384. Fills *out;
 * free with cairn_hash_embedder_free. One per thread.
 * Errors: CAIRN_EINVAL, CAIRN_ENOMEM. */
int cairn_hash_embedder(cairn_embedder *out, uint32_t dim);
void cairn_hash_embedder_free(cairn_embedder *e);

/* Parse one JSON array of numbers (what an external embedder writes per
 * text) into out[0..*n), at most max values; white space may surround it,
 * nothing else. Errors: CAIRN_EINVAL (not an array, empty, a value not a
 * finite float, more than max, text after the array: err, errlen bytes,
 * says which). */
int cairn_parse_vector(const char *text, size_t len, float *out, size_t max, size_t *n,
                       char *err, size_t errlen);

/* What a cairn_mem_store pruned to keep its namespace within the limit. */
typedef struct cairn_mem_prune {
    uint64_t pruned;           /* memories of the namespace tombstoned (0: none) */
    uint64_t kept;             /* live memories of the namespace after the store */
    uint64_t limit;            /* the limit applied (0: none) */
    const char *reason;        /* static: "maxMemories" when pruned, else "" */
} cairn_mem_prune;

#define CAIRN_MEM_STORE_OPTS_VERSION 2
typedef struct cairn_mem_store_opts {
    unsigned version;          /* CAIRN_MEM_STORE_OPTS_VERSION */
    const char *ns;            /* NULL = "" */
    const char *category;      /* NULL = "fact"; 1..64 bytes */
    double importance;         /* 0..1; < 0 = the default 0.5 */
    int64_t expires_at;        /* 0 = never */
    const char *metadata;      /* JSON object text, NULL = none */
    /* Its vector, made by the handle's embedder (cairn_mem_set_embedder,
     * whose dim it has), instead of calling it; NULL = the embedder makes
     * one (or none without an embedder). */
    const float *vector;
    /* Out, may be NULL: what the call pruned. Filled by every call (all 0
     * and reason "" when nothing was pruned, or when it failed before
     * storing). */
    cairn_mem_prune *prune;
    /* version 2: */
    int keep_duplicate;        /* 1: store it even when the namespace holds the same
                                  content (entries of a log, such as the memory
                                  stream, that may repeat a text) */
    const char *id;            /* the memory's id (1..32 of [A-Za-z0-9_.-]); NULL = a
                                  new one. A live memory of this id with the same
                                  namespace and content: nothing is written, *existed
                                  = 1; with another: CAIRN_EEXIST */
    int no_embed;              /* 1: store it without a vector even when the handle
                                  has an embedder (one is made later: archival) */
    int no_limit;              /* 1: this store prunes nothing: the max_memories
                                  limit is not applied (the cognitive tiers, whose
                                  entries no count may prune; budgets govern them) */
} cairn_mem_store_opts;

#define CAIRN_MEM_STORE_OPTS_INIT { CAIRN_MEM_STORE_OPTS_VERSION, NULL, NULL, -1.0, 0, NULL, NULL, NULL, 0, NULL, 0, 0 }

/* Store content (1 byte..1 MiB of text: valid UTF-8 without NUL, as every
 * text field here, README "Text"). If the same content is already
 * stored in the namespace (and o->keep_duplicate is 0), nothing is written and *out is the existing
 * memory, with *existed = 1 (existed may be NULL). out may be NULL.
 * If the namespace then holds more live memories than the limit (the
 * store's max_memories setting, cairn_config_get; or the handle's option),
 * it is pruned back to the limit: first by forget's normal rule, then the
 * lowest decayed importance (never the memory just stored), in one commit
 * of memory.delete records with reason "maxMemories". A prune is always
 * reported: in *o->prune (how many, how many are left, the limit, the
 * reason) and by a CAIRN_EVENT_PRUNED event (reason "maxMemories",
 * memory: the one stored). A pruned memory can be brought back with
 * cairn_mem_restore. A prune that fails after the memory was stored
 * returns its error; the memory stays stored (*out is not set).
 * Errors: CAIRN_EINVAL (empty or too long content, importance out of 0..1,
 * bad category or metadata, text that is not valid UTF-8 or holds a NUL or
 * a \u0000 in metadata; cairn_errmsg names which), CAIRN_EPERM
 * (read-only), and the errors of cairn_append(). */
int cairn_mem_store(cairn_mem *m, const char *content, const cairn_mem_store_opts *o,
                    cairn_memory **out, int *existed);

/* Get a live memory by id. Errors: CAIRN_ENOTFOUND (no such id, deleted,
 * or expired), CAIRN_ENOMEM. */
int cairn_mem_get(cairn_mem *m, const char *id, cairn_memory **out);

#define CAIRN_MEM_UPDATE_OPTS_VERSION 1
typedef struct cairn_mem_update_opts {
    unsigned version;          /* CAIRN_MEM_UPDATE_OPTS_VERSION */
    double importance;         /* < 0 = unchanged */
    const char *category;      /* NULL = unchanged */
    const char *metadata;      /* NULL = unchanged; a JSON object replaces it */
    int set_expires;           /* 1: expires_at below replaces it */
    int64_t expires_at;        /* 0 = never */
} cairn_mem_update_opts;

#define CAIRN_MEM_UPDATE_OPTS_INIT { CAIRN_MEM_UPDATE_OPTS_VERSION, -1.0, NULL, NULL, 0, 0 }

/* Change fields of a live memory. Errors: CAIRN_ENOTFOUND, CAIRN_EINVAL,
 * CAIRN_EPERM, and those of cairn_append(). */
int cairn_mem_update(cairn_mem *m, const char *id, const cairn_mem_update_opts *u);

/* Delete (a tombstone record; the content stays in the log for audits).
 * reason may be NULL. Errors: CAIRN_ENOTFOUND, CAIRN_EPERM, cairn_append's. */
int cairn_mem_delete(cairn_mem *m, const char *id, const char *reason);

/* Clear a namespace (ns), or every namespace (ns NULL): every live memory
 * in it is deleted by one memory.clear record. Irreversible for queries;
 * the records stay in the log. Errors: CAIRN_EPERM, cairn_append's. */
int cairn_mem_clear(cairn_mem *m, const char *ns);

/* Bring back a memory that is no longer live: deleted, pruned past the
 * limit, forgotten, merged away or cleared, as long as its records are in
 * the log. It comes back with its id, namespace, content, category,
 * metadata, importance, expiry, times (createdAt, accessedAt), access
 * count and vector as they were when it went, as one new `memory` record
 * ("restoredFrom": the seq of the record that stored it; format-spec/
 * memory.md, "Restore"). Reads the whole log once, all but its newest
 * records before it takes the writer's turn. *out (may be NULL)
 * gets the memory as restored (cairn_mem_free). No hook runs; listeners
 * get a CAIRN_EVENT_RESTORED event with the memory.
 * Errors: CAIRN_EINVAL (not a memory id; or the namespace is at the limit
 * of live memories: the message names the setting and how to change it),
 * CAIRN_ENOTFOUND (no memory of that id in the log), CAIRN_EEXIST (the
 * memory is live, expired or not; or another live memory of the namespace
 * holds the same content: the message names it), CAIRN_EPERM (read-only
 * handle), the log's read errors, and cairn_append's. */
int cairn_mem_restore(cairn_mem *m, const char *id, cairn_memory **out);

/* What a compaction did (or, dry run, would do): format-spec/compaction.md. */
typedef struct cairn_compact_report {
    cairn_retention retain;      /* the policy applied */
    int dry_run;
    uint64_t segments;           /* sealed segments looked at */
    uint64_t rewritten;          /* of them, written anew (dry run: would be) */
    uint64_t records_before, records_after; /* records in the log (a hole is one) */
    uint64_t bytes_before, bytes_after;     /* bytes of the segment files (dry run:
                                               bytes_after is an estimate) */
    uint64_t dropped;            /* records dropped */
    uint64_t dropped_bytes;      /* their bytes, uncompressed */
    uint64_t memories_dropped;   /* memories no longer live whose records went */
    uint64_t memories_in_grace;  /* no longer live, kept: gone less than the grace
                                    period ago (restore still brings them back) */
    uint64_t memories_pinned;    /* no longer live, kept: an index file of the
                                    store holds them live (the next checkpoint
                                    frees them) */
    uint64_t memories_needed;    /* no longer live, kept: replay still needs them to
                                    skip a record (a second store of their id while
                                    they were live; a vector of another embedder
                                    than theirs, the store's first) */
    uint64_t events_dropped;     /* events dropped by the age or size limit */
    uint64_t events_dropped_bytes;
    uint64_t rolled;             /* 1: the active segment was closed and sealed
                                    first, as it held records to drop */
} cairn_compact_report;

/* Compact the log under the store's retention policy (cairn_config): the
 * records of memories that are no longer live, gone longer than the grace
 * period ago, and events past the event limits, are dropped from the
 * sealed segments, each run of them left as one small record that says
 * what it stood for. Memories, their answers and the statistics are the
 * same before and after; what was dropped cannot be restored. Under
 * memories CAIRN_RETAIN_ALL and no event limit nothing is dropped.
 * When the active segment holds such records it is rolled and sealed
 * first (not in a dry run). Errors: CAIRN_EPERM (read-only handle),
 * CAIRN_ELOCKED, CAIRN_EIO, CAIRN_EFULL (nothing changed), CAIRN_ECORRUPT /
 * CAIRN_ECHECKSUM (a segment that does not read: nothing written; run
 * cairn verify), CAIRN_ENOMEM.
 * A writable handle on a db opened with background threads also compacts
 * on its own, from sealed segments only, once enough has gone
 * (format-spec/compaction.md, "In the background"). */
int cairn_mem_compact(cairn_mem *m, int dry_run, cairn_compact_report *out);

/* What a purge removed. */
typedef struct cairn_purge_report {
    uint64_t records;            /* records of the memory dropped from the log */
    uint64_t bytes;              /* their bytes */
    uint64_t segments;           /* segment files written anew */
    int was_live;                /* it was live: the purge also removed it */
    uint64_t marker_seq;         /* the memory.purge record that says so */
} cairn_purge_report;

/* Remove every record of memory `id` (every life of it, its content,
 * vector and fields) from the log and the memory index now, whatever the
 * retention policy, leaving a memory.purge record with its id and the
 * time. A live memory is removed first. The active segment is rolled and
 * sealed so that the records can go; the memory index is written anew
 * without it. Other processes drop it at their next call; a file one of
 * them still has open keeps its old bytes on disk until it lets go.
 * Errors: CAIRN_ENOTFOUND (the log holds no record of it), CAIRN_EINVAL
 * (not an id), CAIRN_EPERM, and those of cairn_mem_compact. */
int cairn_mem_purge(cairn_mem *m, const char *id, cairn_purge_report *out);

/* Which side finds the candidates (README "Hybrid recall"). */
typedef enum cairn_recall_mode {
    CAIRN_RECALL_HYBRID = 0,   /* BM25 and vectors, fused; lexical alone when the
                                  handle has no embedder or the store no vectors */
    CAIRN_RECALL_LEXICAL = 1,  /* BM25 only */
    CAIRN_RECALL_SEMANTIC = 2  /* vectors only: CAIRN_EUNAVAIL without an embedder
                                  (or query_vector), or with no vectors stored */
} cairn_recall_mode;

/* Which side found a hit (bits of cairn_recall_hit.source). */
#define CAIRN_SOURCE_LEXICAL 1u
#define CAIRN_SOURCE_SEMANTIC 2u

/* A metadata filter of recall (cairn_recall_opts.where): the value at
 * path in a memory's metadata object compared with value. path: member
 * names joined by '.', each may be followed by [N] for an array element
 * (tool.args[0]); a name cannot hold '.', '[', '=', '<' or '>'. value: JSON
 * text (8, true, "x", {...}) compared as JSON, else plain text compared
 * with a string. CAIRN_WHERE_EQ also holds when the value at path is an
 * array with an equal element ("tags", issue numbers); GE and LE compare
 * numbers (value must be one). A memory without the path fails the
 * filter. */
typedef enum cairn_where_op {
    CAIRN_WHERE_EQ = 0,
    CAIRN_WHERE_GE = 1,
    CAIRN_WHERE_LE = 2
} cairn_where_op;

typedef struct cairn_where {
    const char *path;
    cairn_where_op op;
    const char *value;
} cairn_where;

#define CAIRN_RECALL_OPTS_VERSION 2
typedef struct cairn_recall_opts {
    unsigned version;          /* CAIRN_RECALL_OPTS_VERSION */
    size_t k;                  /* 0 = 5 */
    const char *const *ns;     /* namespaces to search, n_ns of them; NULL = {""} */
    size_t n_ns;
    const char *const *categories; /* only these, NULL = all */
    size_t n_categories;
    double min_importance;     /* stored importance at least this; 0 = all */
    int64_t since, until;      /* created_at within [since, until]; 0 = open */
    cairn_recall_mode mode;    /* hybrid (the default), lexical or semantic only */
    const float *query_vector; /* the query's vector (embedder's dim); NULL = embed the query */
    size_t approximate;        /* 0: exact vector search; N: the vectors of the memory index
                                  file through its approximate (IVF) index, probing the N
                                  nearest of its about sqrt(n) lists (README "Approximate
                                  search"); memories stored since are searched exactly */
    const char *const *tags;   /* only memories whose metadata "tags" (an array of
                                  strings) holds at least one of these; NULL = all */
    size_t n_tags;
    int no_access;             /* 1: record no access of the memories found (a search
                                  that only looks: accessCount and accessedAt stay) */
    /* version 2: */
    const cairn_where *where;  /* only memories whose metadata passes all n_where
                                  filters (at most 64); NULL = all */
    size_t n_where;
} cairn_recall_opts;

#define CAIRN_RECALL_OPTS_INIT \
    { CAIRN_RECALL_OPTS_VERSION, 0, NULL, 0, NULL, 0, 0.0, 0, 0, CAIRN_RECALL_HYBRID, NULL, 0, NULL, 0, 0, NULL, 0 }

/* One recalled memory and every component of its score:
 * score = w_relevance*relevance + w_importance*importance
 *       + w_recency*recency + w_access*access (README "Recall").
 * relevance: lexical, bm25 / the best bm25 of the candidates; semantic,
 * similarity / the best similarity; hybrid, the fusion (cairn_fusion; a
 * side that did not find the memory adds 0) over the best fusion of the
 * candidates (README "Hybrid recall" says which and why). */
typedef struct cairn_recall_hit {
    cairn_memory mem;          /* as it is after this recall's access */
    double score;
    double bm25;               /* raw BM25 of the query in its namespace */
    double relevance;          /* bm25 / the best bm25 of the candidates */
    double importance;         /* importance * 0.5^(days since accessed / half-life) */
    double recency;            /* 0.5^(days since created / half-life) */
    double access;             /* ln(1+count) / ln(1+highest count), 0 if none */
    double similarity;         /* cosine similarity to the query's vector, 0 if none */
    unsigned lexical_rank;     /* 1-based rank among BM25 candidates, 0 if not one */
    unsigned semantic_rank;    /* 1-based rank among vector candidates, 0 if not one */
    unsigned source;           /* CAIRN_SOURCE_* bits: which sides found it */
} cairn_recall_hit;

/* The best k live, unexpired memories for query, best first (ties: the
 * older memory first). A query with no terms ranks every memory of the
 * namespaces without relevance. The returned memories' accesses (none
 * with o->no_access) are appended to the store's side file ACCESS, on
 * any handle (read-only too), in one write and never to the log: a recall takes no lock and
 * never waits for a writer; the next writer folds them into the log
 * (README "Access statistics"). accessCount and accessedAt, here and in
 * the ranking, count them at once, also those of other handles and
 * processes. An access that cannot be recorded (read-only file system, no
 * permission) is no error: cairn_mem_access_unrecorded counts it.
 * *hits (free with cairn_recall_free) gets *n_hits entries.
 * Errors: CAIRN_EINVAL, CAIRN_ENOMEM, CAIRN_ECORRUPT (a damaged memory
 * index file). */
int cairn_mem_recall(cairn_mem *m, const char *query, const cairn_recall_opts *o,
                     cairn_recall_hit **hits, size_t *n_hits);

typedef enum cairn_context_format {
    CAIRN_CONTEXT_BULLETS = 0, /* "Relevant memories:\n- content [category]\n..." */
    CAIRN_CONTEXT_PROSE = 1,   /* "Relevant memories: First. Second." */
    CAIRN_CONTEXT_XML = 2,     /* <memories><memory category="...">...</memory></memories> */
    CAIRN_CONTEXT_JSON = 3     /* [{"content": "...", "category": "..."}, ...] */
} cairn_context_format;

#define CAIRN_CONTEXT_OPTS_VERSION 1
typedef struct cairn_context_opts {
    unsigned version;           /* CAIRN_CONTEXT_OPTS_VERSION */
    cairn_recall_opts recall;   /* which memories, as cairn_mem_recall */
    cairn_context_format format;
    size_t max_tokens;          /* 0 = no limit; else the block's estimate stays <= it */
} cairn_context_opts;

#define CAIRN_CONTEXT_OPTS_INIT \
    { CAIRN_CONTEXT_OPTS_VERSION, CAIRN_RECALL_OPTS_INIT, CAIRN_CONTEXT_BULLETS, 0 }

/* Estimated tokens of UTF-8 text: ceil(characters / 4), the usual rule of
 * thumb for English with GPT-style tokenizers (code points, not bytes). */
size_t cairn_token_estimate(const char *s, size_t len);

/* Recall (as cairn_mem_recall, its accesses recorded) and format the
 * memories as a block for a prompt. Memories are added best first while
 * the whole block's estimate stays within max_tokens; the first that does
 * not fit ends it. *out (free()) is "" when no memory is included;
 * *n_included (may be NULL) says how many are. Errors: as recall. */
int cairn_mem_context(cairn_mem *m, const char *query, const cairn_context_opts *o, char **out,
                      size_t *n_included);

typedef enum cairn_forget_mode {
    CAIRN_FORGET_GENTLE = 0,     /* expired, and older than max_age_days */
    CAIRN_FORGET_NORMAL = 1,     /* + decayed importance < 0.01 */
    CAIRN_FORGET_AGGRESSIVE = 2  /* + the bottom 10% of the rest by decayed importance */
} cairn_forget_mode;

#define CAIRN_FORGET_OPTS_VERSION 1
typedef struct cairn_forget_opts {
    unsigned version;          /* CAIRN_FORGET_OPTS_VERSION */
    cairn_forget_mode mode;
    double max_age_days;       /* created longer ago is pruned; 0 = max_retention_days */
    double min_importance;     /* decayed importance below it is pruned; 0 = no such rule */
    int dry_run;               /* count only, change nothing */
    const char *const *ns;     /* namespaces, as recall; NULL = {""} */
    size_t n_ns;
} cairn_forget_opts;

#define CAIRN_FORGET_OPTS_INIT { CAIRN_FORGET_OPTS_VERSION, CAIRN_FORGET_NORMAL, 0, 0, 0, NULL, 0 }

/* Prune memories by the rules of the mode (every mode prunes expired ones
 * and those older than max_age_days; decayed importance as in recall).
 * Pruned memories get memory.delete records with reason "forget:<mode>",
 * all in one commit (a crash leaves all of them or none). *pruned and *kept (may be NULL) count the live
 * memories of the namespaces pruned and left (what would be, in a dry
 * run). Errors: CAIRN_EINVAL, cairn_append's. */
int cairn_mem_forget(cairn_mem *m, const cairn_forget_opts *o, uint64_t *pruned,
                     uint64_t *kept);

typedef struct cairn_mem_category_count {
    char *name;
    uint64_t count;
} cairn_mem_category_count;

/* Statistics of the live, unexpired memories of every namespace. */
typedef struct cairn_mem_stats {
    uint64_t total;
    cairn_mem_category_count *by_category; /* n_categories entries, most first */
    size_t n_categories;
    double avg_importance;     /* as stored; 0 when total is 0 */
    int64_t oldest, newest;    /* createdAt; 0 when total is 0 */
    uint64_t namespaces;       /* with at least one memory ever */
    uint64_t deleted;          /* memories deleted or cleared (still counted once
                                  compaction dropped their records) */
    uint64_t skipped;          /* records replay could not apply */
    uint64_t index_bytes;      /* the memory index files in use; 0 if none */
    uint64_t index_files;      /* how many: a whole file and the generations on it */
    uint64_t index_seq;        /* the last seq they cover */
    uint64_t index_rows;       /* live memories they hold */
    uint64_t unindexed;        /* memory records folded after it (replayed at open) */
    char index_note[CAIRN_ERRMSG_MAX]; /* why a file was set aside at open, or "" */
} cairn_mem_stats;

/* Why the memory index file was not used at open ("" when it was, or when
 * there is none): damaged, another stemmer, unreadable. The state was
 * rebuilt from the log; the text is for a warning. */
const char *cairn_mem_index_note(const cairn_mem *m);

/* Write the memory index file now (format-spec/memindex.md): the state of
 * every memory and a text index per namespace, read in place by the next
 * cairn_mem_open, which then replays only the records after it. The log
 * is synced first. cairn_mem_close does this by itself once 1000 memory
 * records have been folded since the last file; the file is only a cache
 * of the log, and a missing or damaged one is rebuilt from it. It holds the
 * handle's lock while it writes (other calls on this handle wait: about
 * 3 s at 1,000,000 memories), then reads the new file in place of the
 * handle's RAM copies. Records another cairn_mem on the same cairn_db
 * appended are folded in first.
 * Errors: CAIRN_EPERM (read-only handle), CAIRN_EIO, CAIRN_EFULL,
 * CAIRN_ENOMEM, CAIRN_ECORRUPT (the current file is damaged: reopen),
 * CAIRN_EINVAL (this handle failed to apply a record it appended: reopen). */
int cairn_mem_checkpoint(cairn_mem *m);

/* Check every byte of the memory index file the next cairn_mem_open would
 * use (format-spec/memindex.md): rows, hash tables, every text index and
 * posting. A problem goes to fn as for cairn_verify (offset 0) and counts
 * in *problems_out; *checked_out (may be NULL) says whether there was a
 * file. The file is never modified. Errors: CAIRN_EIO, CAIRN_ENOMEM. */
int cairn_mem_verify_index(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems_out,
                           int *checked_out);

/* Check the access side file ACCESS (format-spec/access.md): its header
 * and every entry's checksum. Damage costs access statistics only, but is
 * a problem (fn as for cairn_verify, with the byte offset); a trailing
 * part of an entry is not (a write in flight, or cut by a crash).
 * *checked_out (may be NULL) says whether there was a file this version
 * reads. The file is never modified. Errors (the file could not be read):
 * CAIRN_EPERM, CAIRN_EIO, CAIRN_ENOMEM. */
int cairn_mem_verify_access(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems_out,
                            int *checked_out);

/* Every statistic above; it reads every memory (at 1,000,000 memories
 * about a second and the memories' size in RAM: for a count alone, use
 * cairn_mem_count). Errors: CAIRN_ENOMEM. Free with cairn_mem_stats_free. */
int cairn_mem_stats_get(cairn_mem *m, cairn_mem_stats *out);

/* The live memories of every namespace, from the handle's counters, after
 * catching up with the log: no memory is read, whatever the store's size.
 * A memory past its expiresAt counts until forget removes it (the total of
 * cairn_mem_stats_get leaves it out). Errors: those of reading the log. */
int cairn_mem_count(cairn_mem *m, uint64_t *live);
void cairn_mem_stats_free(cairn_mem_stats *s);

typedef enum cairn_mem_format {
    CAIRN_MEM_JSON = 0,  /* an array of Engram's memory objects, plus "namespace" */
    CAIRN_MEM_MD = 1,    /* "## id" sections with "- field: value" lines, then the content */
    CAIRN_MEM_CSV = 2,   /* RFC 4180, a header row, one memory a row */
    CAIRN_MEM_JSONL = 3  /* JSON Lines: one memory object (as in json) a line */
} cairn_mem_format;

/* Every live, unexpired memory of the namespaces ns[0..n_ns) (NULL: every
 * namespace), oldest first, handed to fn one at a time: fn owns *mem (free
 * it with cairn_mem_free) and returns 0 to go on; a nonzero return stops the
 * walk and is returned. It reads every memory of the store (as export does)
 * and holds the handle's lock meanwhile: fn must not call functions of m.
 * Errors: CAIRN_ENOMEM, those of catching up with the log. */
int cairn_mem_each(cairn_mem *m, const char *const *ns, size_t n_ns,
                   int (*fn)(void *user, cairn_memory *mem), void *user);

/* Every live, unexpired memory (all namespaces), oldest first, as text in
 * *out (free()), *len bytes. JSON round-trips exactly through
 * cairn_mem_import (ids, times, access statistics, metadata, namespace,
 * and the vector: "embedder" and "embedding", its unit-length values);
 * so do md and csv, without vectors. Errors: CAIRN_EINVAL, CAIRN_ENOMEM. */
int cairn_mem_export(cairn_mem *m, cairn_mem_format f, char **out, size_t *len);

/* Import memories from text in format f. Every memory is checked first;
 * one that is not valid (text that is not valid UTF-8, or holds a NUL byte
 * or a \u0000 escape, included) fails the whole import (CAIRN_EINVAL, the
 * message names it and the field) and nothing is stored. Memories whose id is live already, or
 * whose content is already in their namespace (or that of a memory before
 * them in the input), are skipped; the rest are stored with their ids,
 * times and statistics (one record each; a missing id gets a new one, a
 * missing namespace is default_ns, NULL = ""), all in one commit: after a
 * crash or a full disk, however large the import, a reopened store holds
 * all of it or none of it, and a reader never sees part of it
 * (format-spec/record.md, "Commits of several records").
 * A memory's "embedding" (with its "embedder") is stored as its vector:
 * every one must come from the store's embedder (and from the handle's, if
 * it has one), or the import fails. The handle's embedder embeds the
 * others, all in one batch before anything is written.
 * The limit of live memories per namespace (the store's max_memories
 * setting, as cairn_mem_store applies it) holds for an import as a whole:
 * one that would take any namespace past it stores nothing and fails with
 * CAIRN_EINVAL, the message naming the namespace, the setting and how to
 * change it (`cairn config max-memories N`). An import never prunes.
 * Errors: CAIRN_EINVAL, CAIRN_ENOMEM, cairn_append's. */
int cairn_mem_import(cairn_mem *m, cairn_mem_format f, const char *data, size_t len,
                     const char *default_ns, uint64_t *imported, uint64_t *skipped);

/* What became of a memory of an import (cairn_mem_import_each). */
#define CAIRN_IMPORT_STORED 1
#define CAIRN_IMPORT_SKIPPED 2 /* its id was live, or its content was stored already */

/* cairn_mem_import, saying what became of each memory of the input: on
 * success outcome[i] (n_outcome entries at least as many as the input's
 * memories, else CAIRN_EINVAL) is CAIRN_IMPORT_STORED or _SKIPPED. When
 * one memory is refused, *bad (may be NULL) gets its number, 1 for the
 * first (0 when the refusal is the input's as a whole, as a limit), so a
 * caller may drop it and try again; outcome is then not written. */
int cairn_mem_import_each(cairn_mem *m, cairn_mem_format f, const char *data, size_t len,
                          const char *default_ns, unsigned char *outcome, size_t n_outcome,
                          size_t *bad, uint64_t *imported, uint64_t *skipped);

void cairn_mem_free(cairn_memory *mem);
void cairn_recall_free(cairn_recall_hit *hits, size_t n);

/* ---- merge: near-duplicates by their vectors ----------------------------- */

#define CAIRN_MERGE_OPTS_VERSION 1
typedef struct cairn_merge_opts {
    unsigned version;          /* CAIRN_MERGE_OPTS_VERSION */
    double threshold;          /* cosine similarity at least this is a near-duplicate;
                                  0 = 0.85 */
    int dry_run;               /* find and explain, change nothing */
    const char *const *ns;     /* namespaces, as recall; NULL = {""} */
    size_t n_ns;
} cairn_merge_opts;

#define CAIRN_MERGE_OPTS_INIT { CAIRN_MERGE_OPTS_VERSION, 0, 0, NULL, 0 }

/* One merge: `merged` is tombstoned into `kept`. */
typedef struct cairn_merge_pair {
    char kept[CAIRN_MEM_ID_MAX + 1];
    char merged[CAIRN_MEM_ID_MAX + 1];
    double similarity;
    double kept_importance, merged_importance;
    const char *why;           /* "higher importance" or "same importance, older" */
} cairn_merge_pair;

/* Find pairs of live memories of a namespace whose vectors have cosine
 * similarity >= threshold, reading the vector blocks directly (exact below
 * 2,000 vectors; above, each vector is compared with the rows of the 8
 * nearest lists of an IVF partition, README "Merge"). Pairs are taken best
 * first; each memory is merged away at most once, and a memory that kept
 * another is never merged away. In each pair the higher importance is
 * kept (equal: the older). Unless dry_run: the merged memories get one
 * memory.delete each, reason "merge:<kept id>", all in one commit; then
 * each kept memory gets one memory.update whose metadata gains "mergedFrom":
 * [{"id", "content", "similarity", "importance", "at"}, ...] (appended to
 * an existing list). A dry run returns exactly the pairs the merge would.
 * *pairs (free()) gets *n_pairs entries (may be NULL: not wanted);
 * *merged and *kept count memories merged away and the live memories with
 * vectors left (what would be, in a dry run).
 * Errors: CAIRN_EINVAL (threshold outside 0..1), CAIRN_EUNAVAIL (no vectors
 * stored), CAIRN_ENOMEM, cairn_append's. Memories without a vector are
 * never merged. */
int cairn_mem_merge(cairn_mem *m, const cairn_merge_opts *o, cairn_merge_pair **pairs,
                    size_t *n_pairs, uint64_t *merged, uint64_t *kept);

/* ---- remember: memories an LLM extracts from a conversation ------------- */

typedef struct cairn_llm {
    void *user;
    /* Answer the prompt (UTF-8): *answer gets malloc'd text (the engine
     * free()s it). Return 0, or non-zero with a one-line reason in err
     * (CAIRN_ERRMSG_MAX bytes). */
    int (*complete)(void *user, const char *prompt, char **answer, char *err);
} cairn_llm;

#define CAIRN_REMEMBER_OPTS_VERSION 1
typedef struct cairn_remember_opts {
    unsigned version;          /* CAIRN_REMEMBER_OPTS_VERSION */
    const char *ns;            /* NULL = "" */
    double surprise;           /* novelty below this is not stored; 0 = 0.15 */
    double importance;         /* < 0: the LLM's; else overrides it (0..1) */
    const char *category;      /* NULL: the LLM's; else overrides it */
    int dry_run;               /* decide and explain, store nothing */
} cairn_remember_opts;

#define CAIRN_REMEMBER_OPTS_INIT { CAIRN_REMEMBER_OPTS_VERSION, NULL, 0, -1.0, NULL, 0 }

/* One candidate the LLM proposed, and what became of it. */
typedef struct cairn_remember_item {
    char *content;
    char *category;
    double importance;
    double novelty;            /* 1 - the highest similarity to a stored memory of the
                                  namespace (1 when none has a vector) */
    char nearest[CAIRN_MEM_ID_MAX + 1]; /* that memory, "" if none */
    int stored;
    char id[CAIRN_MEM_ID_MAX + 1];      /* the new memory when stored */
    const char *why;           /* "novel", "not novel enough", "already stored" (exact
                                  duplicate), "novel (dry run)" */
} cairn_remember_item;

/* Ask the LLM which memories the conversation holds (messages: a JSON
 * array of {"role", "content"} objects), as a JSON array of {"content",
 * "category", "importance"} (a ``` code fence around it is tolerated; the
 * prompt is in README "Remember"); store each candidate whose novelty is at
 * least the surprise threshold (cairn_mem_store: hooks and events apply),
 * in order, so a later candidate is compared with the earlier ones too.
 * Novelty needs the handle's embedder; without one only exact duplicates
 * are caught. *items (cairn_remember_free) gets one entry per candidate.
 * Errors: CAIRN_EUNAVAIL ("LLM function required": llm NULL),
 * CAIRN_EINVAL (messages not such an array; an LLM answer that is not such
 * an array, or whose text is not valid UTF-8 or holds a NUL or \u0000,
 * named in the message: nothing is stored), CAIRN_EIO (the LLM
 * failed), and those of cairn_mem_store. */
int cairn_mem_remember(cairn_mem *m, const cairn_llm *llm, const char *messages, size_t len,
                       const cairn_remember_opts *o, cairn_remember_item **items,
                       size_t *n_items);
void cairn_remember_free(cairn_remember_item *items, size_t n);

/* ---- hooks and events ------------------------------------------------- */

/* What beforeStore sees and may change: the hook may point any field at its
 * own data (valid until cairn_mem_store returns). */
typedef struct cairn_mem_draft {
    const char *ns;
    const char *content;
    const char *category;
    double importance;
    int64_t expires_at;
    const char *metadata;      /* NULL = none */
} cairn_mem_draft;

/* Hooks run in the calling thread, outside the engine's lock (they may
 * call cairn_mem_* on the same handle, except from inside a hook of that
 * same call). Any may be NULL. */
typedef struct cairn_mem_hooks {
    void *user;
    /* Return 0 to store the (possibly changed) draft, non-zero to reject it:
     * cairn_mem_store then fails with CAIRN_EINVAL ("rejected by the
     * beforeStore hook"). Not called for an exact duplicate. */
    int (*before_store)(void *user, cairn_mem_draft *draft);
    void (*after_store)(void *user, const cairn_memory *stored);
    /* Return a malloc'd query to use instead (freed by the engine), or NULL
     * to keep it. */
    char *(*before_recall)(void *user, const char *query);
    /* Set keep[i] = 0 to drop hits[i]; dropped hits are not returned and
     * not counted as accessed. */
    void (*after_recall)(void *user, const cairn_recall_hit *hits, size_t n, int *keep);
} cairn_mem_hooks;

/* Replace the hooks (NULL: none). */
void cairn_mem_set_hooks(cairn_mem *m, const cairn_mem_hooks *hooks);

/* The time this handle reads as now, in ms since 1970 (0: the wall clock,
 * the default): recall's recency and importance decay, and which memories
 * have expired, in recall, context, get, list, export and stats, and the
 * stream's relative times. For a store as it was at a moment (a view of
 * `--as-of`, a copy from cairn_replay): that moment. Meant for a handle
 * that reads: what it writes is stamped with the wall clock all the same,
 * but the writes that pick memories by expiry (the tiers' reflect, the
 * archival tier's embedding) pick them as of the clock. */
void cairn_mem_set_clock(cairn_mem *m, int64_t now_ms);

typedef enum cairn_mem_event_kind {
    CAIRN_EVENT_STORED = 0,    /* memory */
    CAIRN_EVENT_RECALLED = 1,  /* hits, n_hits */
    CAIRN_EVENT_MERGED = 2,    /* merged, kept (cairn_mem_merge) */
    CAIRN_EVENT_PRUNED = 3     /* pruned, kept, reason ("forget:normal", "maxMemories");
                                  memory: for "maxMemories", the memory whose store
                                  pruned its namespace (NULL if no copy of it could be
                                  made) */,
    CAIRN_EVENT_RESTORED = 4,  /* memory: as cairn_mem_restore brought it back (NULL if
                                  no copy of it could be made) */
    CAIRN_EVENT_REFLECTION_DUE = 5 /* memory: the stream entry whose importance took
                                  the sum since the last reflection to the
                                  threshold (cairn_stream_add); kept: that sum,
                                  pruned: the threshold; reason "reflectionDue" */
} cairn_mem_event_kind;

typedef struct cairn_mem_event {
    cairn_mem_event_kind kind;
    const cairn_memory *memory;
    const cairn_recall_hit *hits;
    size_t n_hits;
    uint64_t merged, pruned, kept;
    const char *reason;
} cairn_mem_event;

typedef void (*cairn_mem_event_fn)(void *user, const cairn_mem_event *ev);

/* Add a listener (up to 8), called after the operation, outside the lock,
 * in the calling thread. Errors: CAIRN_EINVAL (NULL fn or 8 already). */
int cairn_mem_on(cairn_mem *m, cairn_mem_event_fn fn, void *user);

/* The one-line detail of the calling thread's last failed cairn_mem_*
 * call on m ("" if none); per thread, valid until this thread's next call
 * on m (see "Conventions" at the top). */
const char *cairn_mem_errmsg(const cairn_mem *m);

/* ---------------------------------------------------------------------------
 * Cognitive tiers (format-spec/tiers.md, README "Cognitive tiers"): the
 * memory stream (entries by cycle and role), core memory (named sections
 * kept in the prompt), reflections, and their statistics, for an agent
 * team that runs in cycles. They are memories of reserved namespaces
 * ("stream@SCOPE", "core@SCOPE", "reflection@SCOPE"), so every tier is
 * searched, exported, compacted and audited as memories are, and every
 * change is a log record.
 *
 * A scope is "global", "org:NAME" or "repo:OWNER/NAME" (NAME, OWNER: 1..100
 * of [A-Za-z0-9_.-]); NULL is "global". Scopes keep tiers apart: a write
 * goes to its scope only. A stream search or list in repo:O/N also sees
 * org:O and global (in that order of precedence for equal scores and
 * cycles), one in org:O also global, unless only_scope says not to.
 *
 * Entries travel as JSON objects with the field names of the cognitive
 * memory design's TypeScript types (MemoryEntry, CoreMemory, MemoryStats,
 * README "Cognitive tiers"). Every function
 * here returns a cairn status; the detail is cairn_mem_errmsg(m). What
 * they return through out_json is a NUL-terminated JSON text the caller
 * frees with cairn_free().
 * ------------------------------------------------------------------------- */

#define CAIRN_SCOPE_MAX 210  /* "repo:" + 100 + "/" + 100, and room */

/* The token estimate of text[0..len) (UTF-8): its characters (code points)
 * divided by 4, rounded up; 0 for none. The rule of the design review
 * ("~4 characters per token for English text"), not a tokenizer's count. */
size_t cairn_tokens_estimate(const char *text, size_t len);

/* Add one entry to the memory stream of scope (memoryLog). entry_json is an
 * object: "cycle" (integer 0..2^53, required), "role" (1..64 bytes,
 * required), "content" (required), "action" (default: the content's first
 * line, up to 200 bytes), "type" ("action" (default), "observation",
 * "decision"), "importance" (integer 1..10, default 5), "tags" (strings),
 * "issueRefs" and "prRefs" (positive integers), "tokenEstimate" (default
 * cairn_tokens_estimate of the content); "id" and "timestamp" (ISO 8601)
 * keep an imported entry's: an entry whose id is in the stream already is
 * not added again. *out_json (may be NULL) gets {"entry": the entry,
 * "existed": bool, "reflection": {"importanceSinceReflection",
 * "threshold", "due"}}. When this entry takes the importance summed since
 * the last reflection to CAIRN_REFLECTION_THRESHOLD or past it, listeners
 * get CAIRN_EVENT_REFLECTION_DUE (once: not again until a reflection is
 * recorded). Errors: CAIRN_EQUERY (a field missing or out of range; the
 * message names it), CAIRN_EPERM (read-only), cairn_mem_store's. */
int cairn_stream_add(cairn_mem *m, const char *scope, const char *entry_json, char **out_json);

/* Importance summed since the last reflection at which one is due. */
#define CAIRN_REFLECTION_THRESHOLD 150

#define CAIRN_STREAM_QUERY_VERSION 1
typedef struct cairn_stream_query {
    unsigned version;          /* CAIRN_STREAM_QUERY_VERSION */
    const char *scope;         /* NULL = "global" */
    int only_scope;            /* 1: this scope alone; 0: also the wider ones */
    int has_cycles;            /* 1: only cycles cycle_from..cycle_to */
    int64_t cycle_from, cycle_to;
    const char *role;          /* NULL = every role */
    int64_t issue;             /* 0 = any; N > 0: entries whose issueRefs hold N */
    int min_importance;        /* 1..10; 0 = every entry */
    size_t limit;              /* 0: list every entry, search 5; at most 100000 */
} cairn_stream_query;

#define CAIRN_STREAM_QUERY_INIT { CAIRN_STREAM_QUERY_VERSION, NULL, 0, 0, 0, 0, NULL, 0, 0, 0 }

/* The entries of cycles q->cycle_from..q->cycle_to (recallByCycle; the
 * range is required) that pass q's other filters, by cycle, then time,
 * then scope precedence; the first q->limit of them (0: all). *out_json
 * gets an array of entries. Errors: CAIRN_EQUERY (no range, an inverted or
 * negative one, a filter out of range), CAIRN_ENOTFOUND (no entry of the
 * scopes has a cycle in the range, whatever the other filters: the
 * message says which cycles the stream holds), CAIRN_ENOMEM. */
int cairn_stream_list(cairn_mem *m, const cairn_stream_query *q, char **out_json);

/* The entries that best match query (recallSearch), ranked as
 * cairn_mem_recall ranks memories (relevance, importance, recency; README
 * "Recall"), with q's filters; at most q->limit (default 5). Each entry
 * gets "score". A query without terms ranks every entry that passes.
 * Errors: CAIRN_EQUERY (an inverted or negative cycle range, a filter out
 * of range), cairn_mem_recall's. */
int cairn_stream_search(cairn_mem *m, const char *query, const cairn_stream_query *q,
                        char **out_json);

/* Core memory, per scope: the updatable sections "sprint" and "roleState"
 * (one value per role) are replaced whole; the appendable ones "threads",
 * "recentlyShipped" (the last CAIRN_CORE_SHIPPED_MAX items kept: an
 * append past them removes the oldest, and says so), "blockers" and
 * "lessons" take items one at a time, each with an id. A value is JSON
 * (kept as given) or plain text. A section holds at most
 * CAIRN_CORE_SECTION_BUDGET tokens (cairn_tokens_estimate of its values),
 * the core CAIRN_CORE_BUDGET: a change past either is refused with
 * CAIRN_EINVAL and a message naming the budget and the use. */
#define CAIRN_CORE_SHIPPED_MAX 10
#define CAIRN_CORE_SECTION_BUDGET 2000
#define CAIRN_CORE_BUDGET 8000

/* The core of scope as {"scope", "sections": {"sprint": value|null,
 * "roleState": {ROLE: value}, "threads": [items], ...}, "tokens": {"total",
 * "budget", "sections": {NAME: n}}}, an item {"id", "value", "tokens",
 * "added"}; or with section (not NULL) that section alone as
 * {"section", "value"|"items", "tokens", "budget"}. Errors: CAIRN_EQUERY
 * (unknown section, bad scope), CAIRN_ENOMEM. */
int cairn_core_show(cairn_mem *m, const char *scope, const char *section, char **out_json);

/* Replace an updatable section (role: the role for "roleState", required
 * there, NULL for "sprint"). *out_json (may be NULL): {"section", "role",
 * "value", "changed": bool, "tokens"}. Errors: CAIRN_EQUERY (not an
 * updatable section, role missing or given where none belongs, empty
 * value), CAIRN_EINVAL (past a budget), CAIRN_EPERM, cairn_mem_store's. */
int cairn_core_set(cairn_mem *m, const char *scope, const char *section, const char *role,
                   const char *value, char **out_json);

/* Append an item to an appendable section. *out_json (may be NULL):
 * {"section", "item": {"id", "value", "tokens", "added"}, "existed": bool
 * (the same value is in the section already: nothing added), "removed":
 * [ids the cap of recentlyShipped removed]}. Errors: as cairn_core_set. */
int cairn_core_append(cairn_mem *m, const char *scope, const char *section, const char *value,
                      char **out_json);

/* Remove an item of an appendable section by its id (it can be brought
 * back with cairn_mem_restore). *out_json (may be NULL): {"section",
 * "removed": id}. Errors: CAIRN_EQUERY (not an appendable section),
 * CAIRN_ENOTFOUND (no such item in the section), CAIRN_EPERM. */
int cairn_core_remove(cairn_mem *m, const char *scope, const char *section, const char *item_id,
                      char **out_json);

/* Record a reflection: reflection_json is an object with "cycle" (required),
 * "content" (required: what was learned), and optional "role", "outcome",
 * "whatWorked", "timestamp" (ISO 8601), "id" (an imported one's: not
 * recorded twice). It resets the importance summed since the last
 * reflection. *out_json (may be NULL): {"reflection", "existed"}.
 * Errors: CAIRN_EQUERY, CAIRN_EPERM, cairn_mem_store's. */
int cairn_reflection_add(cairn_mem *m, const char *scope, const char *reflection_json,
                         char **out_json);

/* Archival memory, per scope: documents kept for later search. An entry
 * has content and metadata meta_json (may be NULL): "type" (1..64 bytes,
 * default "document"), "source", "date" (YYYY-MM-DD or ISO 8601 UTC),
 * "tags" (strings), "id" (an imported one's: an entry is added once).
 * Without CAIRN_ARCHIVAL_WAIT the entry is stored at once without a vector
 * (found by its words from then on) and, when the handle has an embedder,
 * its embedding is queued on the handle's archival thread, which stores a
 * copy with the vector and removes the first (reason "archival.indexed"):
 * the call returns without waiting for the embedder. With it, the entry is
 * embedded first and stored once. cairn_mem_close works the queue off
 * first. *out_json (may be NULL): {"entry": {"id", "content", "type",
 * "source", "date", "tags", "indexed", "scope", "memoryId"}, "existed",
 * "queued"}. Errors: CAIRN_EQUERY (a field), CAIRN_EEXIST (the id holds
 * other content), CAIRN_EPERM, cairn_mem_store's (and the embedder's,
 * waiting). */
#define CAIRN_ARCHIVAL_WAIT 1u
int cairn_archival_insert(cairn_mem *m, const char *scope, const char *content,
                          const char *meta_json, unsigned flags, char **out_json);

/* Wait until every embedding queued on m is done. Returns the first
 * failure of the thread since the last call (the entry stays stored
 * without a vector), or CAIRN_OK. */
int cairn_archival_wait(cairn_mem *m);

/* Embed every entry of scope stored without a vector (the handle closed
 * before its thread got to it, or had no embedder); *indexed (may be NULL)
 * gets how many. Errors: CAIRN_EUNAVAIL (no embedder), the embedder's and
 * the store's. */
int cairn_archival_index(cairn_mem *m, const char *scope, uint64_t *indexed);

#define CAIRN_ARCHIVAL_QUERY_VERSION 1
typedef struct cairn_archival_query {
    unsigned version;          /* CAIRN_ARCHIVAL_QUERY_VERSION */
    const char *scope;         /* NULL = "global" */
    int only_scope;            /* 1: this scope alone */
    const char *type;          /* NULL = every type */
    int64_t since, until;      /* the entry's date within [since, until], ms; 0 = open
                                  (an entry without a date passes neither bound) */
    size_t limit;              /* 0 = 5; at most 1000 */
} cairn_archival_query;

#define CAIRN_ARCHIVAL_QUERY_INIT { CAIRN_ARCHIVAL_QUERY_VERSION, NULL, 0, NULL, 0, 0, 0 }

/* The archival entries that best match query (archivalSearch), ranked as
 * cairn_mem_recall ranks memories, with q's filters. *out_json: an array
 * of entries with "score". Errors: CAIRN_EQUERY, cairn_mem_recall's. */
int cairn_archival_search(cairn_mem *m, const char *query, const cairn_archival_query *q,
                          char **out_json);

/* Import an ADA agent team's cognitive memory into scope's tiers (README
 * "Importing an ADA team's memory" has the mapping): bank.md (core
 * sections and lessons), stream.jsonl (stream entries, ids, cycles and
 * times kept) and rotation.json (reflections from its history); any may
 * be NULL. Everything is keyed, so a second import adds nothing. A value
 * the tiers refuse (a budget, a bad entry) is skipped and named, as is
 * every part of the files no tier takes. *report_json gets {"core":
 * {"changed", "unchanged"}, "stream": {"added", "existed"}, "reflections":
 * {"added", "existed"}, "skipped": [{"where", "why"}]}, also when the
 * store fails midway (what was imported stays). Errors: CAIRN_EQUERY
 * (scope), CAIRN_EPERM, CAIRN_ENOMEM, the store's write errors. */
int cairn_tiers_import_ada(cairn_mem *m, const char *scope, const char *bank_md, size_t bank_len,
                           const char *stream_jsonl, size_t stream_len, const char *rotation_json,
                           size_t rotation_len, char **report_json);

/* The statistics of scope's tiers (memoryStats): {"scope", "recall":
 * {"entryCount", "oldestCycle", "newestCycle", "totalTokens"}, "archival":
 * {"entryCount", "indexedDocs", "lastIndexed"}, "core": {"tokenUsage",
 * "threadCount", "blockerCount"}, "lastReflection": {"cycle", "timestamp",
 * "importanceAccumulated", "threshold", "due"}}; cycles and times null
 * when there is none. Errors: CAIRN_EQUERY (bad scope), CAIRN_ENOMEM. */
int cairn_tiers_stats(cairn_mem *m, const char *scope, char **out_json);

/* ---------------------------------------------------------------------------
 * Reflexion: episodes, a causal graph and patterns (format-spec/reflexion.md).
 *
 * Every change is a record of the log; the graph is a deterministic fold of
 * those records: the same records give the same nodes, ids, weights and
 * patterns, and the same graph file, byte for byte. The graph file
 * (format-spec/graph.md) holds the fold up to one sequence number, with
 * CSR adjacency both ways and a label index, read in place through mmap;
 * records after it are folded into RAM at open.
 *
 * A handle is safe to share between threads (one mutex). Strings are
 * UTF-8. Returned objects are copies the caller owns.
 * ------------------------------------------------------------------------- */
typedef struct cairn_reflex cairn_reflex;

/* Open the reflexion state of db: map the newest graph file (a damaged one
 * is set aside and the state rebuilt from the log) and fold the records
 * after it. Errors: CAIRN_ENOMEM, CAIRN_EIO, and the log's read errors. */
int cairn_reflex_open(cairn_db *db, cairn_reflex **out);

/* Close; a writer first writes a graph file if many records were folded
 * since the last one. Accepts NULL. */
void cairn_reflex_close(cairn_reflex *r);

/* Write a graph file of the state now (temp file, fsync, rename), and read
 * it back in place of the RAM delta. Errors: CAIRN_EPERM (read-only),
 * CAIRN_EIO, CAIRN_EFULL, CAIRN_ENOMEM. */
int cairn_reflex_checkpoint(cairn_reflex *r);

/* The one-line detail of the calling thread's last failed call on r (""
 * if none); per thread, valid until this thread's next call on r. */
const char *cairn_reflex_errmsg(const cairn_reflex *r);

/* Check the newest graph file and the generations that lie on it, every
 * byte of them; fn is called per problem (may be NULL). *checked_out (may
 * be NULL) = the number of files checked (0: none).
 * Errors: CAIRN_ENOMEM, CAIRN_EIO. */
int cairn_reflex_verify(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems_out,
                        int *checked_out);

/* ---- episodes ------------------------------------------------------------
 * An episode is a JSON object of ReflexionMemory's shape: id ("episode-" +
 * session), session, timestamp (ISO 8601), outcome (success | partial |
 * failure), task, decisions [{id, timestamp, type, context, chosen,
 * rationale, outcome, effects[]}], events [{id, timestamp, type, content,
 * caused_by[], leads_to[]}], metrics {duration_minutes, tool_calls, errors,
 * recoveries, commits, files_changed}, lessons [strings]. Other members
 * are kept as given. */

/* Store an episode from JSON text. Missing optional members get their
 * defaults ([] / {} / zeros; id from session; timestamp from the record's
 * time; task the session id), and a decision or event that cannot be used
 * is dropped (cairn_episode_put_noted says which). Replacing the episode
 * of an existing session needs force (the old version stays in the log).
 * *json_out (may be NULL) gets the episode as stored (free()).
 * Errors: CAIRN_EINVAL (a bad field: the message names it, e.g.
 * "outcome: must be success, partial or failure"; text
 * anywhere in it that is not valid UTF-8 or holds a NUL or \u0000),
 * CAIRN_EEXIST (exists, no force), CAIRN_EPERM, and cairn_append()'s. */
int cairn_episode_put(cairn_reflex *r, const char *json, size_t len, int force, char **json_out);

/* cairn_episode_put, saying what it changed. An episode is kept whole when
 * only parts of it cannot be used: an empty or missing task becomes the
 * session id, and an item of decisions or events that is not valid (not an
 * object, a type the schema does not know, an event without content, a
 * decision without chosen) is dropped; the session, the outcome and a
 * member of the wrong type still fail the put. *notes_out (may be NULL;
 * cairn_free) gets a JSON array of one line per change ("events[3].type:
 * must be tool_call, commit, error, milestone, test or handoff; dropped"),
 * "[]" when there was none; it is NULL only when no memory was left for it
 * (the episode is stored all the same). */
int cairn_episode_put_noted(cairn_reflex *r, const char *json, size_t len, int force,
                            char **json_out, char **notes_out);

/* The episode of a session id (the "episode-" prefix is accepted too) as
 * JSON into *json_out (free()). Errors: CAIRN_ENOTFOUND, the log's read
 * errors. */
int cairn_episode_get(cairn_reflex *r, const char *session_id, char **json_out);

#define CAIRN_EPISODE_QUERY_VERSION 1
typedef struct cairn_episode_query {
    unsigned version;      /* CAIRN_EPISODE_QUERY_VERSION */
    const char *outcome;   /* NULL: any */
    int64_t since_ms;      /* episodes with timestamp >= this; INT64_MIN: all */
    unsigned max_results;  /* 1..100, default 20 */
} cairn_episode_query;
#define CAIRN_EPISODE_QUERY_INIT { CAIRN_EPISODE_QUERY_VERSION, NULL, INT64_MIN, 20 }

/* Episodes matching q (NULL: defaults), newest timestamp first (ties: the
 * later session id first), as a JSON array into *json_out (free()).
 * Errors: CAIRN_EINVAL (outcome, max_results), the log's read errors. */
int cairn_episode_list(cairn_reflex *r, const cairn_episode_query *q, char **json_out);

/* The decisions of an episode (id "episode-..." or a session id) sorted by
 * timestamp (stable), as a JSON array; "[]" when there is no such episode.
 * Errors: the log's read errors, CAIRN_ENOMEM. */
int cairn_episode_decisions(cairn_reflex *r, const char *episode_id, char **json_out);

/* Build an episode from a session log (markdown or JSON, as the agent
 * project's .agents/sessions/ holds them). file_name is the log's name
 * (directories are ignored): the session id is its stem. *json_out gets
 * the episode (free()); it is not stored. err (may be NULL,
 * CAIRN_ERRMSG_MAX bytes) says why on failure. Errors: CAIRN_EINVAL
 * (unparseable log, no session id), CAIRN_ENOMEM. */
int cairn_episode_extract(const char *file_name, const char *data, size_t len, char **json_out,
                          char *err);

/* ---- the causal graph ---------------------------------------------------- */
typedef enum cairn_node_type {
    CAIRN_NODE_DECISION = 0,
    CAIRN_NODE_EVENT = 1,
    CAIRN_NODE_OUTCOME = 2,
    CAIRN_NODE_PATTERN = 3,
    CAIRN_NODE_ERROR = 4,
    /* Event types, as nodes made from episodes' events carry them. */
    CAIRN_NODE_TOOL_CALL = 5,
    CAIRN_NODE_COMMIT = 6,
    CAIRN_NODE_MILESTONE = 7,
    CAIRN_NODE_TEST = 8,
    CAIRN_NODE_HANDOFF = 9
} cairn_node_type;
#define CAIRN_NODE_TYPES 10

typedef enum cairn_edge_type {
    CAIRN_EDGE_CAUSES = 0,
    CAIRN_EDGE_ENABLES = 1,
    CAIRN_EDGE_PREVENTS = 2,
    CAIRN_EDGE_CORRELATES = 3
} cairn_edge_type;
#define CAIRN_EDGE_TYPES 4

/* Names ("decision", "causes") and their parsers (CAIRN_EINVAL if unknown). */
const char *cairn_node_type_name(unsigned type);
int cairn_node_type_parse(const char *name, unsigned *type);
const char *cairn_edge_type_name(unsigned type);
int cairn_edge_type_parse(const char *name, unsigned *type);

#define CAIRN_NODE_ID_MAX 17  /* "n" + 16 hex digits */
#define CAIRN_LABEL_MAX 4096  /* bytes of a label, a pattern's strings, an episode id */

typedef struct cairn_causal_node {
    char id[CAIRN_NODE_ID_MAX + 1]; /* from the label: stable, deterministic */
    unsigned type;
    char *label;
    char **episodes;       /* episode ids, in the order they were added */
    size_t n_episodes;
    uint64_t frequency;    /* times added */
    double success_rate;   /* 1.0, as ReflexionMemory keeps it */
    int64_t created_ms;    /* time of the record that created it */
} cairn_causal_node;

typedef struct cairn_causal_edge {
    char source[CAIRN_NODE_ID_MAX + 1], target[CAIRN_NODE_ID_MAX + 1];
    unsigned type;
    double weight;         /* running average of the weights added */
    uint64_t evidence_count;
    char **episodes;
    size_t n_episodes;
    int64_t created_ms;
} cairn_causal_edge;

void cairn_causal_node_clear(cairn_causal_node *n);
void cairn_causal_edge_clear(cairn_causal_edge *e);

/* Add a node. A node with exactly this label exists: its frequency goes up
 * by one and episode (may be NULL) joins its list if new. *out (may be
 * NULL) gets the node after the change (cairn_causal_node_clear()).
 * Errors: CAIRN_EINVAL (type, empty or long label, a label or episode that
 * is not valid UTF-8), CAIRN_EPERM, and
 * cairn_append()'s. */
int cairn_causal_add_node(cairn_reflex *r, unsigned type, const char *label, const char *episode,
                          cairn_causal_node *out);

/* Add an edge between two existing nodes (by id). The same (source,
 * target, type) exists: weight becomes the running average
 * (w * n + weight) / (n + 1) and evidence_count n + 1. weight 0..1.
 * Errors: CAIRN_EINVAL, CAIRN_ENOTFOUND (a node id), CAIRN_EPERM, and
 * cairn_append()'s. */
int cairn_causal_add_edge(cairn_reflex *r, const char *source_id, const char *target_id,
                          unsigned type, double weight, const char *episode,
                          cairn_causal_edge *out);

/* One change of a batch. */
typedef struct cairn_causal_op {
    int is_edge;           /* 0: a node (type, label); 1: an edge */
    unsigned type;         /* cairn_node_type or cairn_edge_type */
    const char *label;     /* node */
    const char *source, *target; /* edge: node ids */
    double weight;         /* edge */
    const char *episode;   /* NULL: none */
} cairn_causal_op;

/* Apply n changes with one commit, in order (an edge may name a node added
 * earlier in the batch: cairn_causal_node_id() gives its id). All or
 * nothing: a bad op (the message names its index) appends none, and a
 * crash or a full disk while it is written leaves all of it or none.
 * Errors: as the single calls. */
int cairn_causal_add_batch(cairn_reflex *r, const cairn_causal_op *ops, size_t n);

/* The id the node labelled `label` has, or would get if added now, into id.
 * Errors: CAIRN_EINVAL. */
int cairn_causal_node_id(cairn_reflex *r, const char *label, char *id);

/* A node by id into *out. Errors: CAIRN_ENOTFOUND, CAIRN_ENOMEM. */
int cairn_causal_get_node(cairn_reflex *r, const char *id, cairn_causal_node *out);

typedef struct cairn_causal_path {
    int found;
    cairn_causal_node *path; /* the nodes from source to target */
    size_t n;
    unsigned depth;          /* edges on the path (found only) */
    char error[96];          /* why not (not found only) */
} cairn_causal_path;
void cairn_causal_path_clear(cairn_causal_path *p);

/* A shortest path along out-edges from the first node whose label contains
 * from_label to the first whose label contains to_label (case-insensitive,
 * after Unicode case folding; "first" = earliest created), of at most
 * max_depth edges (1..10; 0 = 5). Not found is not an error: out->found = 0
 * and out->error says "Node not found" or "No path found within depth N".
 * Errors: CAIRN_EINVAL (empty label, max_depth), CAIRN_ENOMEM,
 * CAIRN_ECORRUPT (a damaged graph file). */
int cairn_causal_path_find(cairn_reflex *r, const char *from_label, const char *to_label,
                           unsigned max_depth, cairn_causal_path *out);

/* ---- patterns ------------------------------------------------------------- */
typedef struct cairn_pattern {
    char id[CAIRN_NODE_ID_MAX + 1]; /* "p" + 16 hex digits, from the name */
    char *name, *description, *trigger, *action;
    double success_rate;   /* running average */
    uint64_t occurrences;
    int64_t last_used_ms;
    int64_t created_ms;
    char **episodes;
    size_t n_episodes;
} cairn_pattern;

#define CAIRN_PATTERN_SPEC_VERSION 1
typedef struct cairn_pattern_spec {
    unsigned version;         /* CAIRN_PATTERN_SPEC_VERSION */
    const char *name, *trigger, *action;
    const char *description;  /* NULL: "" */
    double success_rate;      /* 0..1 (ReflexionMemory's default is 1.0) */
    const char *episode;      /* NULL: none */
} cairn_pattern_spec;

#define CAIRN_PATTERN_SPEC_INIT { CAIRN_PATTERN_SPEC_VERSION, NULL, NULL, NULL, NULL, 1.0, NULL }

/* Add a pattern; one of the same name exists: occurrences + 1, success rate
 * the running average, last_used now (trigger, action and description stay
 * the first ones). *out may be NULL. Errors: CAIRN_EINVAL (a field, named),
 * CAIRN_EPERM, cairn_append()'s. */
int cairn_pattern_add(cairn_reflex *r, const cairn_pattern_spec *spec, cairn_pattern *out);

/* Patterns with success_rate >= min_success_rate and occurrences >=
 * min_occurrences (1..1000), best first (ties: more occurrences, then
 * name). *out (cairn_patterns_free()) may be NULL when *n is 0.
 * Errors: CAIRN_EINVAL, CAIRN_ENOMEM. */
int cairn_pattern_list(cairn_reflex *r, double min_success_rate, uint64_t min_occurrences,
                       cairn_pattern **out, size_t *n);

/* Anti-patterns: success_rate <= max_success_rate and at least 2
 * occurrences, worst first. Errors: as cairn_pattern_list(). */
int cairn_pattern_anti(cairn_reflex *r, double max_success_rate, cairn_pattern **out, size_t *n);
void cairn_patterns_free(cairn_pattern *p, size_t n);
/* Free the strings of one pattern (as cairn_pattern_add() fills); NULL ok. */
void cairn_pattern_clear(cairn_pattern *p);

/* ---- status, update, import ------------------------------------------------ */
typedef struct cairn_reflex_status {
    uint64_t episodes, nodes, edges, patterns;
    int64_t updated_ms;      /* time of the last graph record; 0: none */
    uint64_t processed;      /* episodes folded into the graph by updates */
    char graph_file[64];     /* the graph file in use ("" if none) */
    uint64_t graph_covered;  /* the seq it covers */
    uint64_t delta_records;  /* records folded in RAM after it */
    uint64_t skipped;        /* records that could not be applied */
} cairn_reflex_status;
int cairn_reflex_status_get(cairn_reflex *r, cairn_reflex_status *out);

#define CAIRN_CAUSAL_UPDATE_VERSION 1
typedef struct cairn_causal_update_opts {
    unsigned version;
    int64_t since_ms;        /* only episodes with timestamp >= this */
    int dry_run;             /* count what would be added; append nothing */
} cairn_causal_update_opts;
#define CAIRN_CAUSAL_UPDATE_INIT { CAIRN_CAUSAL_UPDATE_VERSION, INT64_MIN, 0 }

typedef struct cairn_causal_update_stats {
    uint64_t episodes_processed, nodes_added, edges_added, patterns_added;
} cairn_causal_update_stats;

/* Fold every stored episode not yet folded into nodes, edges and patterns
 * (format-spec/reflexion.md, "Update"), all in one commit with a
 * causal.update record naming them: running it again changes nothing.
 * nodes_added / edges_added / patterns_added count new ones only.
 * Errors: CAIRN_EPERM, cairn_append()'s, the log's read errors. */
int cairn_causal_update(cairn_reflex *r, const cairn_causal_update_opts *o,
                        cairn_causal_update_stats *out);

typedef struct cairn_causal_import_stats {
    uint64_t nodes, edges, patterns, skipped;
    /* Of nodes: those that became one with another node of the same label
     * (an earlier node of the file, or one the graph held already), so the
     * graph gained nodes - merged. */
    uint64_t merged;
} cairn_causal_import_stats;

/* Import a causal-graph.json of ReflexionMemory's schema ({version, updated,
 * nodes[{id, type, label, episodes[]}], edges[{source, target, type,
 * weight, evidence_count, episodes[], contributions{}}], patterns[...]}):
 * one record per node episode, per edge contribution (or evidence) and per
 * pattern contribution, in one commit, so that the fold gives back the
 * same frequencies, weights and occurrences. Node ids are cairn's (from
 * the label); edges are mapped through the file's ids. An entry that
 * cannot be used (unknown type, missing node) is skipped and counted; text
 * anywhere in the file that is not valid UTF-8 or holds a NUL or \u0000
 * fails the whole import (nothing is appended). The records are one
 * commit: after a crash or a full disk the graph holds all of them or
 * none, and a reader never sees part of them.
 * Errors: CAIRN_EINVAL (not JSON, not the schema, such text: the message
 * says where),
 * CAIRN_EPERM, cairn_append()'s. */
int cairn_causal_import(cairn_reflex *r, const char *json, size_t len,
                        cairn_causal_import_stats *out);

/* ---------------------------------------------------------------------------
 * Memory history (an audit from the log itself).
 * ------------------------------------------------------------------------- */

/* Every record of the log that made or changed memory `id`, oldest first:
 * its store (and a restore's new copy), updates, deletes, the access folds
 * that counted it, the clears of its namespace after it was stored, a merge
 * that took it in, and a purge. Read from the log, not the memory index, so
 * a removed memory has its history too until compaction drops its records.
 * *json_out (free()) gets a JSON array of {"seq", "ts" (ISO 8601, UTC),
 * "type" (the record type's name), "ns", "payload" (as the log holds it)}.
 * Errors: CAIRN_ENOTFOUND (the log holds no record of it; *json_out NULL),
 * CAIRN_EINVAL (empty id), CAIRN_ENOMEM, the log's read errors. */
int cairn_mem_history(cairn_db *db, const char *id, char **json_out);

/* ---------------------------------------------------------------------------
 * The tool interface: one handle over a store's log, memories and
 * reflexion, driven by named tools with JSON arguments and JSON results.
 * `cairn mcp` serves these tools over the Model Context Protocol and the
 * Python package binds to them. Only strings and one callback signature
 * cross it, so a binding from any language never copies a struct layout.
 *
 * Conventions of this part of the API:
 * - Every result and every error is a JSON object in a string the caller
 *   frees with cairn_free().
 * - An error is {"error": {"code": "CAIRN_EINVAL", "status": -3,
 *   "message": "k: must be an integer from 1 to 1000"}}, returned with the
 *   call that failed: nothing is kept per handle, so several threads may
 *   share a session and read their own errors.
 * - Calls on one session take turns (one mutex); a session holds a writer
 *   handle unless opened read-only, and like every writer takes the
 *   store's writer lock only for a commit, so any number of sessions, in
 *   any processes, share a store.
 * ------------------------------------------------------------------------- */
typedef struct cairn_session cairn_session;

/* The tools as a JSON array of {"name", "title", "description",
 * "inputSchema", "annotations"} (MCP's tool objects; inputSchema is JSON
 * Schema: type, description, required, enum, minimum, maximum, items,
 * additionalProperties false). Static: never freed, never NULL. */
const char *cairn_session_tools(void);

/* Open a session on the store in directory path. options_json (NULL = {})
 * is an object of: "create" (bool, default true: make the store if it is
 * missing), "read_only" (bool: no lock, no write; write tools fail with
 * CAIRN_EPERM), "busy_timeout_ms" (integer: how long a write waits for
 * another process's turn; default 5000), "embedder" ("auto": the built-in
 * one when the store's vectors are its own, else none (the default);
 * "builtin"; "none"). On failure *out is NULL and *error_json (may be NULL;
 * cairn_free) says why. Errors: CAIRN_EINVAL (options), and those of
 * cairn_open and cairn_mem_open. */
int cairn_session_open(cairn_session **out, const char *path, const char *options_json,
                       char **error_json);

/* Call tool `name` with args_json (a JSON object; NULL = {}). Arguments are
 * checked against the tool's inputSchema before anything runs: an unknown
 * or mistyped argument, a missing required one or a value out of range
 * fails with CAIRN_EINVAL naming it. *result_json (cairn_free) gets the
 * result object on CAIRN_OK, the error object otherwise (an unknown tool:
 * CAIRN_ENOTFOUND). Returns CAIRN_OK or the status code. */
int cairn_session_call(cairn_session *s, const char *name, const char *args_json,
                       char **result_json);

/* An embedder as a plain callback, for bindings: embed text (UTF-8, len
 * bytes) into out[0..dim); return 0, or non-zero with a one-line reason in
 * err (CAIRN_ERRMSG_MAX bytes). Called in the thread of the tool call. */
typedef int (*cairn_embed_fn)(void *user, const char *text, size_t len, float *out, char *err);

/* Use fn (named `name`, 1..63 bytes, of dimension dim) for the memories
 * stored and the queries recalled from now on; fn NULL: none (lexical
 * only). min_similarity as cairn_embedder's. user must outlive the session
 * or the next call of this function. *error_json as for a call.
 * Errors: CAIRN_EINVAL (bad name or dim; the store holds vectors of
 * another embedder: the message names it). */
int cairn_session_set_embedder(cairn_session *s, const char *name, uint32_t dim,
                               double min_similarity, cairn_embed_fn fn, void *user,
                               char **error_json);

/* Close the session and its store handle (as cairn_close). Accepts NULL.
 * Returns cairn_close's status. */
int cairn_session_close(cairn_session *s);

/* Free a string the tool interface returned. Accepts NULL. */
void cairn_free(void *p);

#ifdef __cplusplus
}
#endif
#endif /* CAIRN_H */
