/*
 * memkeys.h - what a writer needs to know of memories it has not folded.
 *
 * A store needs two answers about the memories other processes stored
 * since this handle last folded the log: is this content already stored
 * in this namespace (the duplicate check), and is this new id taken.
 * Folding each of those records in full (decode every field, build the
 * entry, queue its text) is most of what 16 writers on one store spend;
 * a writer that only stores needs neither the entries nor the text index.
 * So while it waits for its turn and at its catch-up, such a writer reads
 * only the id and the content of each store record, and keeps two sets of
 * 64-bit keys. Its own stores go there too.
 *
 * The keys over-approximate: a hit may be a hash collision or a record the
 * full fold would skip, so a hit sends the caller to the full fold, which
 * decides. A miss is exact: every store record after the fold is in the
 * sets, and any record the keys cannot stand for (an update, a delete, a
 * clear, a purge, a commit of several, a store of another shape, a hole
 * compaction left) ends the keys and the caller folds the full way.
 * The sets live in a handle's RAM, or in KEYS, shared by the writer
 * processes (keyfile.h); dropping them is always correct (the next fold
 * reads the records again from the log).
 */
#ifndef CAIRN_MEMKEYS_H
#define CAIRN_MEMKEYS_H

#include <stddef.h>
#include <stdint.h>

/* Keys added wait here in small groups: their slots are fetched into the
 * cache together, not one miss after another (the sets of 100,000s of
 * memories are far larger than the cache). */
#define CAIRN__MEMKEYS_GROUP 16

/* Namespaces the keys count memories of, at most (a store into one more
 * folds the full way). */
#define CAIRN__MEMKEYS_NS 32

/* What the sets count. In a handle's own sets, memories added since they
 * were last emptied. In KEYS, the file shared by a store's writers
 * (keyfile.h), this block is bytes 64..607 of the file, changed in place
 * by the writer in its turn: there `n` counts the keys put since the file
 * was made (the slots in use), while the counts per namespace start again
 * with `base`. */
typedef struct cairn__memkeys_core {
    uint64_t base;      /* KEYS: the store records in (base, covered] have */
    uint64_t covered;   /* their keys in the sets (0, 0 in a handle's own) */
    uint64_t n;         /* memories added (pending ones too) */
    uint64_t n_ns;
    uint64_t ns_key[CAIRN__MEMKEYS_NS], ns_n[CAIRN__MEMKEYS_NS]; /* memories added per namespace */
} cairn__memkeys_core;

typedef struct cairn__memkeys {
    uint64_t *content;  /* keys of namespace + content; 0 empty */
    uint64_t *ids;      /* keys of ids; 0 empty */
    size_t cap;         /* slots of each, a power of 2 (0: none yet) */
    cairn__memkeys_core *core; /* &own, or the block of a mapped KEYS */
    cairn__memkeys_core own;
    int fixed;          /* the sets are a mapped file's: no growth, no
                           pending keys (another process reads them next) */
    uint64_t pend_content[CAIRN__MEMKEYS_GROUP], pend_id[CAIRN__MEMKEYS_GROUP];
    size_t n_pend;      /* added, not yet in the tables */
} cairn__memkeys;

/* The key of namespace ns[0..len). */
uint64_t cairn__memkeys_ns_key(const char *ns, size_t len);

/* The key of content[0..len) in the namespace of ns_key. */
uint64_t cairn__memkeys_content_key(uint64_t ns_key, const char *content, size_t len);

/* The key of an id. */
uint64_t cairn__memkeys_id_key(const char *id, size_t len);

/* Use the sets of a mapped file (core, and content and ids of cap slots
 * each): the handle's own sets are emptied and freed first. */
void cairn__memkeys_attach(cairn__memkeys *k, cairn__memkeys_core *core, uint64_t *content,
                           uint64_t *ids, size_t cap);

/* Back to the handle's own sets, empty (the file's stay as they are). */
void cairn__memkeys_detach(cairn__memkeys *k);

/* Memories the sets hold (in a file: the keys put since it was made). */
uint64_t cairn__memkeys_count(const cairn__memkeys *k);

/* Add one memory's keys. CAIRN_ENOMEM: the sets cannot grow (a file's:
 * half its slots are in use); CAIRN_EINVAL:
 * a namespace past CAIRN__MEMKEYS_NS (either way nothing is added; the
 * caller drops the sets). */
int cairn__memkeys_add(cairn__memkeys *k, uint64_t ns_key, uint64_t content_key, uint64_t id_key);

/* The slot of the namespace of ns_key in the counts (ns_key[], ns_n[]),
 * or -1 when none is counted. */
long cairn__memkeys_ns_slot(const cairn__memkeys *k, uint64_t ns_key);

/* Memories added in the namespace of ns_key. */
uint64_t cairn__memkeys_in_ns(const cairn__memkeys *k, uint64_t ns_key);

/* 1 if the key may be in the set, 0 if it is not. */
int cairn__memkeys_has_content(const cairn__memkeys *k, uint64_t key);
int cairn__memkeys_has_id(const cairn__memkeys *k, uint64_t key);

/* Empty the sets (large tables are freed, small ones kept). A file's sets
 * are left alone: see cairn__memkeys_detach. */
void cairn__memkeys_clear(cairn__memkeys *k);

void cairn__memkeys_free(cairn__memkeys *k);

/* The keys of a memory store record's payload json[0..len) in namespace
 * ns, read from the two fields the writer puts first
 * ({"id":"...","content":"...", ...); the content's escapes are read as
 * a JSON decoder reads them (its key is that of the decoded bytes). 1 with
 * the keys; 0 when the payload has another shape, a content no decoder
 * reads as bytes without a NUL (\u0000, a lone surrogate, a raw control
 * byte), escapes or control bytes after the content, or a commit's mark:
 * the caller folds that record the full way. Reads nothing past len. */
int cairn__memkeys_of_record(const char *ns, size_t ns_len, const char *json, size_t len,
                             uint64_t *ns_key, uint64_t *content_key, uint64_t *id_key);

#endif /* CAIRN_MEMKEYS_H */
