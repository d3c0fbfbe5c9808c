/*
 * memstate.h - the memory engine's state, shared by its files:
 * memory.c (state, replay, store/get/update/delete) and recall.c.
 * Everything here is used with cairn_mem.mu held.
 */
#ifndef CAIRN_MEMSTATE_H
#define CAIRN_MEMSTATE_H

#include <pthread.h>
#include <stdint.h>

#include "cairn.h"
#include "memrec.h"
#include "ramindex.h"
#include "tokenize.h"

#define DAY_MS 86400000.0

typedef struct ment {
    char id[CAIRN_MEM_ID_MAX + 1];
    uint32_t nsi;            /* index into m->ns */
    int live;
    char *content;
    size_t content_len;
    char *category;
    char *metadata;          /* NULL = {} */
    double importance;
    int64_t created, accessed, expires;
    uint64_t access_count;
    uint64_t seq;            /* its store record: the index's document number */
    uint64_t content_hash;   /* of namespace + content: duplicate check */
} ment;

typedef struct nspace {
    char *name;
    cairn__ramidx *idx;
    uint64_t live;           /* live memories in it */
} nspace;

struct cairn_mem {
    cairn_db *db;
    int read_only;
    pthread_mutex_t mu;
    char stemmer[32];
    double half_life;
    double w_rel, w_imp, w_rec, w_acc;
    cairn__tokenizer *tok;   /* counts a query's terms */
    ment *e;
    size_t n, cap;
    uint32_t *by_id;         /* entry + 1; 0 empty; cap a power of 2 */
    uint32_t *by_content;    /* likewise, keyed by content_hash */
    size_t tcap;
    nspace *ns;
    size_t nns;
    uint64_t skipped;
    uint64_t id_counter;
    double max_retention;    /* days */
    uint64_t max_memories;   /* per namespace */
    cairn_mem_hooks hooks;
    struct {
        cairn_mem_event_fn fn;
        void *user;
    } listeners[8];
    size_t nlisteners;
    char err[CAIRN_ERRMSG_MAX];
};

int cairn__mem_fail(cairn_mem *m, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int64_t cairn__mem_wall_ms(void);

/* The entry whose store record is seq, or NULL. */
ment *cairn__mem_find_seq(cairn_mem *m, uint64_t seq);

/* The namespace's number, created if asked; -1 if absent (or no memory). */
long cairn__mem_ns_index(cairn_mem *m, const char *name, size_t len, int create);

int cairn__mem_expired(const ment *x, int64_t now);

/* Fill *c with copies of x's fields (cairn_memory owns them). */
int cairn__mem_copy_out(const cairn_mem *m, const ment *x, cairn_memory *c);

/* Append r as a record of namespace ns, then apply it in RAM. */
int cairn__mem_write_rec(cairn_mem *m, const char *ns, const memrec *r, uint64_t *seq_out);

/* Delete n live entries with one append (a batch of memory.delete records
 * with this reason, one commit), then in RAM. */
int cairn__mem_delete_many(cairn_mem *m, ment *const *xs, size_t n, const char *reason);

/* importance x 0.5^(days since last access / half-life). */
double cairn__mem_decayed(const cairn_mem *m, const ment *x, int64_t now);

/* The live entry with this id, or NULL. */
ment *cairn__mem_find_id(cairn_mem *m, const char *id);

/* The live entry of namespace ns with exactly this content, or NULL. */
ment *cairn__mem_find_dup(cairn_mem *m, const char *ns, const char *content, size_t len);

/* A fresh id ("m" + 16 hex digits) no live memory has, into id. */
void cairn__mem_new_id(cairn_mem *m, const char *content, char *id);

/* Call every listener with ev (mu NOT held). */
void cairn__mem_emit(cairn_mem *m, const cairn_mem_event *ev);

/* The hooks, copied under mu (mu NOT held). */
cairn_mem_hooks cairn__mem_hooks(cairn_mem *m);

#endif /* CAIRN_MEMSTATE_H */
