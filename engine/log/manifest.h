/*
 * manifest.h - MANIFEST, the list of live files (format-spec/manifest.md).
 *
 * File: a 64-byte file header ("CAIRNMAN"), a store block (version 5: 88
 * bytes; 4: 80; 3: 40; 2: 32; 1: none), entry_count entries of 56 bytes,
 * and an 8-byte trailer: XXH3-64 of every byte before it.
 * Header fields: 16 u64 generation, 24 u64 next_segment_id,
 * 32 u64 segment_size, 40 u32 batch_ms, 44 u8 durability, 45..47 reserved,
 * 48 u32 entry_count, 52 u32 entry_size (56).
 * Store block: 0 store_id[16], 16 u64 synced_seq, 24 u64 lost_total,
 * (version 3) 32 u64 max_memories, (version 4) 40 u32 retain, 44 u32
 * reserved, 48 u64 retain_grace_ms, 56 u64 dropped_upto, 64 u64
 * events_max_age_ms, 72 u64 events_max_bytes, (version 5) 80 u64
 * deaths_dropped, (version 6) 88 u32 label_rule, 92 u32 reflect_threshold,
 * 96 u32 core_budget, 100 u32 core_section_budget, (version 7) 104 u32
 * n_types, (version 9) 108 u32 n_files. After the entries (version 7):
 * n_types named record types of 72 bytes: 0 u16 type, 2 u8 name length,
 * 3..7 reserved, 8 name[64] (zero after the name). After them (version 9):
 * n_files derived files of 32 bytes: 0 u8 kind, 1..7 reserved, 8 u64 seq,
 * 16 u64 length, 24 u64 header sum (the file's bytes 56..63).
 * Entry (88 bytes; 56 before version 8): 0 u64 segment_id, 8 u8 kind,
 * (version 8) 9 u8 flags (1: chained), 10..11 reserved, (version 4) 12 u32
 * rev (compactions of a sealed segment), 16 u64 base_seq,
 * 24 u64 last_seq, 32 u64 record_count, 40 i64 first_ts, 48 i64 last_ts,
 * (version 8) 56 chain[32]: the hash chain after the segment's last record
 * (zero unless chained).
 */
#ifndef CAIRN_MANIFEST_H
#define CAIRN_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "status.h"

#define MANIFEST_NAME "MANIFEST"
#define MANIFEST_TMP "MANIFEST.tmp"
#define MAN_ENTRY_SIZE 88u    /* version 8: the hash chain at the segment's end */
#define MAN_ENTRY_SIZE_V7 56u /* versions 1 to 7 */
#define MAN_ENTRY_CHAINED 1u  /* entry flags (offset 9): `chain` holds the value */
#define MAN_MAX_ENTRIES (1u << 20)
#define MAN_STORE_BLOCK 112u /* version 7: store id, synced seq, lost records,
                                max_memories, retention, dropped_upto,
                                deaths_dropped, the tier settings, n_types */
#define MAN_STORE_BLOCK_V6 104u /* version 6: the same without the named types */
#define MAN_STORE_BLOCK_V5 88u /* version 5: the same without the tier settings */
#define MAN_STORE_BLOCK_V4 80u /* version 4: the same without deaths_dropped */
#define MAN_STORE_BLOCK_V3 40u /* version 3: the same without the retention */
#define MAN_STORE_BLOCK_V2 32u /* version 2: the same without max_memories */
/* The memory limit of a store whose MANIFEST predates the setting (versions
 * 1 and 2), and of a new store: what the memory engine always applied. */
#define MAN_DEFAULT_MAX_MEMORIES 10000u
/* How causal labels are compared (version 6): byte for byte (every store
 * made before the setting: its node ids come from the exact label), or
 * after Unicode case folding (a store made since). */
#define MAN_LABELS_EXACT 1u
#define MAN_LABELS_FOLDED 2u
/* The tier settings of a store whose MANIFEST predates them, and of a new one. */
#define MAN_DEFAULT_REFLECT 150u
#define MAN_DEFAULT_CORE_BUDGET 8000u
#define MAN_DEFAULT_SECTION_BUDGET 2000u
#define MAN_TIER_MAX 100000000u /* a budget or threshold is 1..this */
#define MAN_TYPE_SIZE 72u   /* a named record type (version 7) */
#define MAN_TYPES_MAX 4096u /* named record types a store holds at most */
#define MAN_FILE_SIZE 32u   /* a derived file (version 9) */
#define MAN_FILES_MAX 4096u /* derived files a MANIFEST lists at most */
#define MAN_SEQ_MAX (1ull << 62) /* synced_seq and lost_total are below it */
#define MAN_STORE_ID_LEN 16u

enum {
    SEG_SEALED = 1, /* <id>.seg, immutable, compressed */
    SEG_CLOSED = 2, /* <id>.log, full and fsynced, awaiting sealing */
    SEG_ACTIVE = 3  /* <id>.log, appended to; always the last entry */
};

typedef struct manifest_entry {
    uint64_t id;
    uint8_t kind;
    uint64_t base_seq;
    uint64_t last_seq;     /* base_seq - 1 when empty; 0 for the active entry */
    uint64_t count;        /* sequence numbers it spans (records, but for a
                              compacted segment, whose holes stand for
                              several); 0 for the active entry (scanned) */
    int64_t first_ts, last_ts;
    uint32_t rev;          /* SEALED: times compacted; the file is <id>.seg
                              for 0, <id>-<rev as 8 hex>.seg after */
    int chained;           /* version 8, SEALED: chain is known */
    uint8_t chain[32];     /* the log's hash chain after the segment's last
                              record (chain.h) */
} manifest_entry;

/* A record type an embedder named (cairn_type_register). */
typedef struct manifest_type {
    uint16_t type;         /* CAIRN_REC_USER_MIN.. */
    char name[CAIRN_TYPE_NAME_MAX + 1];
} manifest_type;

/* A derived file the MANIFEST lists (version 9): the memory index, graph
 * file and graph generation files a reader may use. Its name comes from
 * kind and seq (seqfile.h); length and header sum bind the entry to the
 * bytes of the one file written under that name. */
enum {
    MAN_FILE_MEMINDEX = 1, /* mem-<seq>.cmx */
    MAN_FILE_GRAPH = 2,    /* graph-<seq>.cgx */
    MAN_FILE_GRAPHGEN = 3  /* graph-<seq>.cgg */
};

typedef struct manifest_file {
    uint8_t kind;          /* MAN_FILE_* */
    uint64_t seq;          /* the seq it covers: its name */
    uint64_t len;          /* its length in bytes */
    uint64_t sum;          /* its common header's checksum (bytes 56..63) */
} manifest_file;

/* Is name[0..len) a valid type name: 1..64 of [a-z0-9_.-], a letter first,
 * and not the name of one of the engine's types? */
int cairn__type_name_ok(const char *name, size_t len);

typedef struct manifest {
    uint64_t generation;
    uint64_t next_id;
    uint64_t segment_size;
    uint32_t batch_ms;
    uint8_t durability;
    uint16_t version;      /* as read (1 to 9); a write is always the newest */
    uint8_t store_id[MAN_STORE_ID_LEN]; /* random at creation; all zero in
                                           version 1 (a writer's open gives one) */
    uint64_t synced_seq;   /* every record up to this seq was on stable storage
                              when it was recorded: the log may not end before
                              it (0: nothing recorded) */
    uint64_t lost_total;   /* records writers found lost below synced_seq and
                              retired, over the store's life */
    uint64_t max_memories; /* the store setting: live memories per namespace,
                              0 = no limit (MAN_DEFAULT_MAX_MEMORIES when
                              read from version 1 or 2) */
    cairn_retention retain; /* version 4: what compaction keeps (all, no
                              event limit, when read from an earlier version) */
    uint64_t dropped_upto; /* version 4: the highest seq compaction ever
                              dropped (0: none). A handle whose fold is
                              behind it folds again from an index file */
    uint64_t deaths_dropped; /* version 5: memories whose going compaction
                              dropped, over the store's life (the records of
                              those gone still in the log are the others:
                              what a compaction could free) */
    uint32_t label_rule;   /* version 6: MAN_LABELS_*; EXACT when read from an
                              earlier version */
    uint32_t reflect_threshold, core_budget, core_section_budget; /* version 6:
                              the cognitive tiers' settings (MAN_DEFAULT_* when
                              read from an earlier version) */
    manifest_type *types;  /* version 7: named record types, by type */
    size_t n_types;
    manifest_file *files;  /* version 9: the derived files, by kind then seq.
                              Read from an earlier version (or a directory
                              without MANIFEST): those the directory holds */
    size_t n_files;
    manifest_entry *e;
    size_t n;
} manifest;

/* A manifest of nothing with the settings of a new store: no entries, the
 * default limit, labels case-folded, the tiers' defaults. */
void cairn__manifest_init(manifest *m);

/* Are these tier settings valid? 1..MAN_TIER_MAX each, a section's budget
 * not above the core's. */
int cairn__tier_settings_ok(uint32_t reflect, uint32_t core, uint32_t section);

/* Encode into a new buffer (*out, *len; free with cairn__free), always in
 * the newest version. CAIRN_EINVAL: the store id is zero (a version 1
 * MANIFEST read and not given an id). */
int cairn__manifest_encode(const manifest *m, const cairn_allocator *a, uint8_t **out,
                           size_t *len);

/* Decode and validate: checksums, versions, reserved fields, kinds, ids
 * strictly increasing, one active entry and it is last, sequence ranges
 * non-overlapping (gaps are legal). On success m->e is allocated (free with cairn__manifest_free). */
int cairn__manifest_decode(const uint8_t *buf, size_t len, const cairn_allocator *a,
                           manifest *m, cairn__err *e);

/* Replace MANIFEST atomically: write MANIFEST.tmp, fsync, rename, fsync dir. */
int cairn__manifest_write(const cairn_io *io, int dirfd, const manifest *m,
                          const cairn_allocator *a, cairn__err *e);

/* Read and decode MANIFEST. CAIRN_ENOTFOUND when there is none. A MANIFEST
 * before version 9 lists no derived file: m->files gets those the directory
 * holds (cairn__derived_scan), which the next MANIFEST written keeps. */
int cairn__manifest_read(const cairn_io *io, int dirfd, const cairn_allocator *a, manifest *m,
                         cairn__err *e);

/* 1 if a retention policy is one a MANIFEST may hold. */
int cairn__retention_ok(const cairn_retention *r);

/* 1 if a store id is all zero: none given yet (a version 1 MANIFEST). */
int cairn__store_id_is_zero(const uint8_t *id);

/* The derived files the directory holds, by kind then seq, into *out (n;
 * free with cairn__free): each one's length and header sum as they are
 * now. A file shorter than a header is left out. CAIRN_EIO, CAIRN_ENOMEM. */
int cairn__derived_scan(const cairn_io *io, int dirfd, const cairn_allocator *a,
                        manifest_file **out, size_t *n, cairn__err *e);

/* The list's order: by kind, then seq. */
int cairn__manifest_file_cmp(const manifest_file *a, const manifest_file *b);

/* The listed file of this kind and seq; NULL if none. */
const manifest_file *cairn__manifest_file(const manifest *m, uint8_t kind, uint64_t seq);

/* A copy has room for one more derived file (a publish adds one). */
int cairn__manifest_copy(const manifest *src, const cairn_allocator *a, manifest *dst);
void cairn__manifest_free(const cairn_allocator *a, manifest *m);

#endif /* CAIRN_MANIFEST_H */
