/*
 * memrec.h - the JSON payloads of memory records (format-spec/memory.md):
 * encoding for the writer, strict decoding for replay and import.
 *
 * Decoding takes any bytes (a record's payload is data: another writer, a
 * bug, or a hostile import may have put anything there) and either fills a
 * memrec or returns CAIRN_ECORRUPT with one line naming the field.
 * Strings in a decoded memrec point into the cJSON tree it holds: valid
 * until cairn__memrec_done().
 */
#ifndef CAIRN_MEMREC_H
#define CAIRN_MEMREC_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"
#include "status.h"

struct cJSON;

/* Add an integer to a cJSON object as its exact digits (a raw item):
 * cJSON's own numbers are doubles printed with 15 significant digits,
 * which rounds times above ~2^50. Returns 0 on no memory. */
int cairn__json_add_int(struct cJSON *o, const char *name, int64_t v);

/* Record types of memories (cairn.h has their public names). */
#define MEM_ID_MAX 32          /* id: 1..32 of [A-Za-z0-9_.-] */
#define MEM_CATEGORY_MAX 64    /* category: 1..64 bytes */
#define MEM_CONTENT_MAX (1u << 20)

/* Which fields an update record carries. */
#define MEMREC_HAS_IMPORTANCE 1u
#define MEMREC_HAS_CATEGORY 2u
#define MEMREC_HAS_METADATA 4u
#define MEMREC_HAS_EXPIRES 8u

typedef struct memrec {
    uint16_t type;             /* CAIRN_REC_MEMORY... */
    const char *id;            /* store, update, delete */
    const char *content;       /* store */
    size_t content_len;
    const char *category;      /* store; update if HAS_CATEGORY */
    double importance;         /* store; update if HAS_IMPORTANCE */
    int64_t created_at;        /* store: 0 = the record's time */
    int64_t accessed_at;       /* store: 0 = created_at; access: the time */
    uint64_t access_count;     /* store */
    int64_t expires_at;        /* store/update: 0 = never */
    char *metadata;            /* store/update: JSON object text (malloc), NULL = {} */
    const char *reason;        /* delete: may be NULL */
    const char **ids;          /* access: the memories read (malloc array) */
    size_t n_ids;
    uint64_t *counts;          /* access, a fold: accesses of ids[i] (malloc
                                  array; NULL: the per-recall form, one each) */
    int64_t *lasts;            /* access, a fold: the last access of ids[i] */
    uint64_t acc_file;         /* access, a fold: the ACCESS file's id */
    uint64_t acc_upto;         /* access, a fold: its bytes folded */
    const char *clear_ns;      /* clear: the namespace, NULL = all */
    int purge_live;            /* purge: the memory was live when purged (its
                                  "at" is accessed_at) */
    unsigned has;              /* update: MEMREC_HAS_* */
    const char *embedder;      /* store: its vector's embedder, NULL = no vector */
    uint32_t dim;              /* store: the vector's length */
    const void *vec;           /* store: dim f32 little-endian (the record's
                                  binary trailer; maybe unaligned) */
    uint64_t restored_from;    /* store: the seq of the memory record whose memory
                                  this one brings back (cairn_mem_restore); 0: a
                                  memory stored anew */
    uint64_t batch_i, batch_n; /* any type: record batch_i of a commit of
                                  batch_n >= 2 records ("batch", batch.h);
                                  batch_n 0: not part of one */
    void *root;                /* the cJSON tree */
    char *owned;               /* or the buffer the strings point into
                                  (cairn__memrec_decode_own) */
} memrec;

/* Decode the payload of a record of memory type `type`.
 * Errors: CAIRN_ECORRUPT (e names the field), CAIRN_ENOMEM. On error
 * nothing needs freeing. */
int cairn__memrec_decode(uint16_t type, const char *json, size_t len, memrec *out, cairn__err *e);

/* The same for a record with its binary trailer (a memory's vector). */
int cairn__memrec_decode_bin(uint16_t type, const char *json, size_t len, const void *bin,
                             size_t bin_len, memrec *out, cairn__err *e);

/* A reusable buffer for cairn__memrec_decode_scan (zeroed: empty). */
typedef struct cairn__memscan {
    char *buf;
    size_t cap;
} cairn__memscan;

/* The same as cairn__memrec_decode_bin, faster for the common records:
 * a store, update or delete whose payload is a flat JSON object without
 * escapes is read without cJSON or a malloc, its strings in sc's buffer
 * (valid until the next decode with sc, or cairn__memscan_free). Any
 * other payload, and any that breaks a rule, goes to cJSON, so the result
 * and the error are always the cJSON decoder's (fuzz_memrec checks).
 * sc NULL: cJSON only. */
int cairn__memrec_decode_scan(cairn__memscan *sc, uint16_t type, const char *json, size_t len,
                              const void *bin, size_t bin_len, memrec *out, cairn__err *e);

void cairn__memscan_free(cairn__memscan *sc);

/* The same for a record kept a while (an import holds thousands): its
 * strings in a buffer of its own, exactly its size, freed by
 * cairn__memrec_done (or in its cJSON tree, when the scan declines). */
int cairn__memrec_decode_own(uint16_t type, const char *json, size_t len, memrec *out,
                             cairn__err *e);

/* Free what a successful decode holds. */
void cairn__memrec_done(memrec *r);

/* Encode r (type r->type) as JSON text into *out (malloc'd, NUL-terminated;
 * the caller frees it with free()). Errors: CAIRN_ENOMEM, CAIRN_EINVAL (a
 * field out of range: e names it). */
int cairn__memrec_encode(const memrec *r, char **out, size_t *len, cairn__err *e);

/* The same through a cJSON tree, for every shape; cairn__memrec_encode
 * writes a memory record without metadata itself, byte for byte as this. */
int cairn__memrec_encode_generic(const memrec *r, char **out, size_t *len, cairn__err *e);

/* 1 if s is a valid memory id. */
int cairn__memrec_id_ok(const char *s);

#endif /* CAIRN_MEMREC_H */
