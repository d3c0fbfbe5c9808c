/*
 * memstate.h - the memory engine's state, shared by its files:
 * memory.c (state, replay, store/get/update/delete) and recall.c.
 * Everything here is used with cairn_mem.mu held.
 */
#ifndef CAIRN_MEMSTATE_H
#define CAIRN_MEMSTATE_H

#include <pthread.h>
#include <stdint.h>

#include "access.h"
#include "batch.h"
#include "cairn.h"
#include "memindex.h"
#include "keyfile.h"
#include "memkeys.h"
#include "memrec.h"
#include "ramindex.h"
#include "shadowmap.h"
#include "store.h"
#include "tokenize.h"
#include "vecset.h"
#include "vkernel.h"

#define DAY_MS 86400000.0

/* The vector side's default weight in score fusion: on LoCoMo dev with the
 * built-in embedder every weight above 0 ranked worse than BM25 alone
 * (bench/README.md, "Hybrid recall"), so by default similarity only ranks
 * what BM25 did not find, below every BM25 match. RRF's default is 1. */
#define MEM_SEMANTIC_WEIGHT 0.0

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
    uint8_t owns;            /* OWN_*: strings malloc'd, not in the index file */
    uint64_t changed;        /* an entry of an index file changed since it
                                was written: the covered seq of the newer file
                                whose shadow row changed it, or CHANGED_RAM;
                                0 unchanged */
} ment;

#define CHANGED_RAM UINT64_MAX

/* Index files in use at most: a whole file and the generations on it
 * (format-spec/memindex.md, "Generations"). */
#define MEM_GEN_MAX 12

/* Entries of a file's rows, made as they are read, MENT_CHUNK at a time. */
#define MENT_CHUNK 512
typedef struct mentchunk {
    struct mentchunk *next;
    size_t used;
    ment e[MENT_CHUNK];
} mentchunk;

/* One index file of the chain in use. Its rows n_shadow.. are memories
 * stored in (base, covered]; rows before change memories of the files
 * below: those that end one are applied at open, the others when the
 * memory's entry is made (m->shadows). */
typedef struct mgen {
    memindex mx;
    ment **rowp;             /* row i's entry once read, else NULL. The
                                entries sit side by side in chunks in the
                                order they were read: the few rows an open
                                or a query touches, scattered over a large
                                file, fault in few pages (rowp is calloc'd:
                                8 bytes of address space a row) */
    mentchunk *chunks;
    size_t at;               /* cairn__mem_at's place of its first own row */
} mgen;

/* Strings of m->e's entries live in chunks freed together with the
 * entries (free_state): one malloc per 64 KiB, not three per memory. A
 * string an update replaces is malloc'd and owned (OWN_*). */
typedef struct strchunk {
    struct strchunk *next;
    size_t used, cap;
    char data[];
} strchunk;

#define OWN_CONTENT 1
#define OWN_CATEGORY 2
#define OWN_METADATA 4

/* Memory records folded since the index files before close writes a new
 * one (cairn_mem_close); cairn_mem_checkpoint writes one at any time. */
#define MEM_CHECKPOINT_MIN 1000

/* Memories in RAM after the index files before a write writes them out
 * as a generation (cairn__mem_flush_if_due): bounds what a close writes,
 * and the RAM a long ingest holds. Each flush stops the stores for a
 * fixed part (the indexing queue, the chain read again) besides writing
 * its rows (~110 ms at 65,536; its fsync runs on the merger thread): at
 * 32,768 a 1M ingest took 17-18% longer than at 65,536
 * (bench_memory, when the flush also waited for its fsync), while a
 * close's tail write grows by ~40 ms at most. */
#define MEM_FLUSH_ROWS 65536

/* A close's file of at most this many rows is put in place without its
 * fsync, naming the boot it was written in (boot.h): its records are what
 * a crash of the machine makes the next open replay. */
#define MEM_UNSYNCED_ROWS (2 * MEM_FLUSH_ROWS)

/* A flush's file, written and read in place of the RAM tail but not yet
 * put in place (memory.c, "Deferred flushes"): under its temp name until
 * a later turn syncs it, renames it and lists it. */
typedef struct mem_pending {
    int on;
    int fd;                  /* the temp file, open */
    uint64_t covered, salt;  /* its name, and its temp name's */
    uint64_t dropped;        /* cairn__dropped_upto when it was written */
    uint64_t keep[MEM_GEN_MAX]; /* the files it lies on (their covered seqs) */
    size_t n_keep;
} mem_pending;

typedef struct nspace {
    char *name;
    cairn__ramidx *idx;      /* memories stored after the index files */
    cairn__ramidx *gidx[MEM_GEN_MAX]; /* mapped from index file g, or NULL */
    cairn__vecset *vec;      /* vectors of memories stored after the files, or NULL */
    cairn__vecset *gvec[MEM_GEN_MAX]; /* mapped from index file g, or NULL */
    struct cairn__ivf *ivf;  /* approximate index over gvec[0], built on first use */
    const float **ivf_rows;  /* its row pointers (into the mapping) */
    uint64_t live;           /* live memories in it */
} nspace;

struct cairn_mem {
    cairn_db *db;
    int read_only;
    pthread_mutex_t mu;
    char stemmer[32];
    double half_life;
    double w_rel, w_imp, w_rec, w_acc;
    cairn_fusion fusion;
    double w_sem;            /* the vector side's weight in the fusion */
    cairn__tokenizer *tok;   /* counts a query's terms */
    /* The memories the index files hold: a whole file and the generations
     * on it, oldest first (ng 0: none in use). */
    mgen gen[MEM_GEN_MAX];
    size_t ng;
    /* Their shadow rows that change a memory of a file below, by the
     * memory's seq: a row's entry takes its shadow when it is made
     * (shadowmap.h); a shadow row that ended a memory is applied at open. */
    cairn__shadowmap shadows;
    uint64_t index_live;     /* live memories the files held at open */
    uint64_t base_deleted;   /* dead memories no entry is left of */
    char index_note[CAIRN_ERRMSG_MAX]; /* why an index file was set aside */
    int index_outdated; /* the newest file is of other tokenizer rules: close replaces it */
    int damaged;             /* a row of the file failed its check */
    int row_nomem;           /* the last cairn__mem_row that failed ran out
                                of memory (not damage): set by it, cleared
                                by the callers that tell the two apart */
    int check_only;          /* a scratch state of verify: removes no file */
    int stale;               /* a record was appended but not applied: the
                                state is no longer a fold of the log */
    size_t inline_texts;       /* texts indexed inline (read-only handles) */
    int ix_tried;              /* a read-only handle started its indexer, or failed to */
    struct cairn__indexer *ix; /* adds stored texts to the index on a thread
                                of its own (indexer.h), or NULL: inline */
    struct cairn__merger *merger; /* merges index files on a thread of its
                                own (merger.h), or NULL: inline */
    int bg_merge;            /* merges are the merger's (it may be stopped:
                                a close writes the tail alone) */
    ment **owned;            /* rows of the files with malloc'd strings (updated) */
    size_t n_owned, owned_cap;
    mem_pending pend;        /* the top file, if not in place yet */
    int chain_reread;        /* a flush's file was given up or not surely
                                listed: the next checkpoint reads the chain
                                on disk first (and a close writes one) */
    size_t flush_rows;       /* MEM_FLUSH_ROWS (tests: fewer) */
    int unsynced_gone;       /* an unsynced file of an earlier boot was set
                                aside at open: the close writes its records
                                again, however few */
    ment **touched;          /* rows of the files changed (ment.changed) */
    size_t n_touched, touched_cap;
    /* The memories stored after it, in seq order. */
    ment *e;
    size_t n, cap;
    uint64_t folded;         /* last log seq folded into this state */
    uint64_t tail_records;   /* memory records folded after the file */
    uint64_t tail_weight;    /* the same, an access record counting once for
                                each memory it names: what replaying them
                                costs an open (close_wants_checkpoint) */
    int opened;
    /* Entries (indexes into e, in seq order) whose text is not in the text
     * index yet: after a catch-up folded another process's memories, texts
     * wait until something reads the index (cairn__mem_index_settle), so a
     * process that only writes never indexes what others store. */
    size_t *lazy;
    size_t n_lazy, lazy_cap;
    int lazy_mode;           /* a catch-up folded others' records: defer */
    /* The namespaces' RAM indexes' sizes when the state was last freed (a
     * flush's reload), by XXH3 of the name: one made again starts at its
     * size (cairn__ramidx_presize). */
    struct ns_size {
        uint64_t name;
        cairn__ramidx_size size;
    } *ns_sizes;
    size_t n_ns_sizes;
    size_t ix_bound;         /* texts queued before a store waits (indexer.h;
                                0: the queue's own bound) */
    int id_checked;          /* the record cairn__mem_write_rec appends next has
                                an id its writer found on no live memory in
                                this turn; while it is applied with nothing
                                folded before it, apply_store need not look
                                again */
    /* A writer that only stores folds others' store records as keys alone
     * (memkeys.h): the records in (folded, keyed] are in keys, not in the
     * state; keyed <= folded: none are. */
    cairn__memkeys keys;
    uint64_t keyed;
    cairn__keyfile kf;       /* KEYS, shared by the writer processes: when
                                mapped, keys are its sets (keyfile.h) */
    uint64_t keys_renew;     /* keys_one_shared: the seq to make KEYS afresh
                                from (0: none) */
    /* KEYS counts memories per namespace since its base; what of them
     * this handle's state holds already is known at two points: its state
     * at the base (none), or at covered (all, as counted then). ksnap_n
     * are the counts when covered was ksnap_seq, valid while the state
     * is at ksnap_seq and the base at ksnap_base, in the file ksnap_ino
     * (keys_in_ns). */
    int ksnap_ok;
    uint64_t ksnap_seq, ksnap_base;
    ino_t ksnap_ino;
    uint64_t ksnap_n[CAIRN__MEMKEYS_NS];
    uint64_t *by_id;         /* entry + 1 | the hash's top 32 bits << 32 (a
                                probe skips other hashes without reading the
                                entry); 0 empty; cap a power of 2 */
    uint64_t *by_content;    /* likewise, keyed by content_hash */
    size_t tcap;
    nspace *ns;
    size_t nns;
    uint64_t skipped;
    uint64_t unfinished;     /* of skipped: records of a commit that is not
                                whole in the log (an import cut short) */
    cairn__batch batch;      /* replay: the last commit looked up (batch.h) */
    cairn__access *acc;      /* ACCESS as this handle reads it (access.h), or NULL */
    uint64_t acc_fold_file;  /* the last fold record applied: the ACCESS file it */
    uint64_t acc_fold_upto;  /* folded, and the bytes of it folded (0: none) */
    uint64_t id_counter;
    int64_t clock_ms;        /* cairn_mem_set_clock: now for reads; 0: the wall clock */
    double max_retention;    /* days */
    uint64_t max_memories;   /* this handle's own limit per namespace
                                (cairn_mem_options); 0: the store's setting
                                (cairn__mem_limit) */
    /* Vectors: the store's embedder as its vectors say (vdim 0: none
     * yet), and the one this handle embeds with (emb.dim 0: none). */
    char vname[CAIRN_EMBEDDER_NAME_MAX + 1];
    uint32_t vdim;
    cairn_embedder emb;
    uint64_t emb_gen;        /* counts cairn_mem_set_embedder calls: a vector
                                made before a turn is kept only if the
                                embedder is still the one that made it */
    char emb_name[CAIRN_EMBEDDER_NAME_MAX + 1];
    const vkernel *kern;
    float *vtmp;             /* vdim floats of scratch (an unaligned trailer) */
    cairn__memscan scan;     /* the replay's decode buffer (memrec.h) */
    /* A memory's content read from the log (cairn__mem_text): the reader
     * of its store record, and the text, valid until the next read. */
    cairn__fetch fetch;
    cairn__memscan text_scan; /* its decode buffer: not scan's, which a
                                 replay may be using (a delete's fold reads
                                 the content it takes out of the index) */
    char *text;
    size_t text_cap;
    int wait_rc;             /* a fold while waiting for the lock failed: the
                                turn's error (memory.c, fold_waiting) */
    char wait_err[CAIRN_ERRMSG_MAX];
    struct strchunk *strs;   /* the strings of m->e's entries (keep_str) */
    cairn_mem_hooks hooks;
    struct {
        cairn_mem_event_fn fn;
        void *user;
    } listeners[8];
    size_t nlisteners;
    /* The cognitive tiers' sum of stream importance since the last
     * reflection of one scope (tiers.c), taken up to memory seq `upto`;
     * tier_mu orders it (taken before mu, never inside it). */
    pthread_mutex_t tier_mu;
    pthread_mutex_t tier_write_mu; /* a tier's read-check-write (cairn__mem_turn_hold):
                                      one thread of the handle at a time; taken
                                      before the turn, tier_mu and mu */
    struct tier_sum {
        char scope[CAIRN_SCOPE_MAX + 1];
        uint64_t upto, limit, refl_seq;
        int64_t acc, refl_cycle, refl_time;
        int has_refl, valid, told;
    } tier_sum;
    /* The archival tier's embedding thread (tiers/archival.c), or NULL;
     * on_close stops it before the handle goes. */
    struct tier_archiver *archiver;
    void *cycles;                 /* the stream's cycle index (tiers/cycles.c), */
    void (*cycles_free)(void *);  /* freed at close by this */
    uint64_t meta_changes;        /* metadata updates applied, and state rebuilds:
                                     a layer's cache of metadata is stale when
                                     it changes */
    void (*on_close)(cairn_mem *m);
    /* its error detail: per thread, cairn__errbuf(m) */
};

int cairn__mem_fail(cairn_mem *m, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Fold what other processes (and other handles) appended since this
 * handle last looked: before every read (mu held). */
int cairn__mem_catch_up(cairn_mem *m);

/* Fold in full what the handle holds only as keys (memkeys.h), if any:
 * before anything that needs every memory in the state. */
int cairn__mem_unkey(cairn_mem *m);

/* Hold the writer's turn across several calls of the API (a read, a check,
 * then writes: the tiers' budgets and replacements), without m->mu held;
 * the calls inside take it again (turns nest). Other processes wait for
 * the turn, other threads of the handle for tier_write_mu. Release with
 * the call's status; returns it, or the release's error. */
int cairn__mem_turn_hold(cairn_mem *m);
int cairn__mem_turn_release(cairn_mem *m, int rc);

/* text's vector made with the handle's embedder (*out malloc'd; NULL when
 * the handle has none), and *gen the embedder's generation: a tier embeds
 * before it holds the turn, so that no writer of another process waits
 * for the embedder. cairn__mem_embedder_is says whether that embedder is
 * still the handle's. Errors: the embedder's, CAIRN_ENOMEM. */
int cairn__mem_embed_one(cairn_mem *m, const char *text, float **out, uint64_t *gen);
int cairn__mem_embedder_is(cairn_mem *m, uint64_t gen);
/* A commit that reads the state and writes records (mu held): begin takes
 * the store's writer lock, releasing mu while it waits, then catches up,
 * so that nothing of another process comes between the checks and the
 * write; end writes the records to the file and lets the lock go, and
 * returns rc (or the error of that write if rc is CAIRN_OK). A read-only
 * handle gets CAIRN_EPERM from begin. */
int cairn__mem_turn_begin(cairn_mem *m);
int cairn__mem_turn_end(cairn_mem *m, int rc);

/* Wait until every stored text is in its namespace's index (the indexing
 * thread is idle): before anything reads or changes an index (mu held).
 * A text the thread failed to add (no memory) makes the handle stale and
 * is an error, once. */
int cairn__mem_index_settle(cairn_mem *m);
/* The end of a settle whose wait for the indexing thread returned rc
 * (made elsewhere): a failure marks m stale and says so. */
int cairn__mem_index_settled(cairn_mem *m, int rc);
int64_t cairn__mem_wall_ms(void);
/* Now as this handle reads it: its clock (cairn_mem_set_clock), else the
 * wall clock. */
int64_t cairn__mem_now(const cairn_mem *m);

/* The index file failed a check (rc) at `what`: remove it (a writer), mark
 * the handle damaged, say so in m->err. Returns CAIRN_ECORRUPT. */
int cairn__mem_index_damaged(cairn_mem *m, int rc, const char *what);

/* Row i of index file g as an entry, read and checked on first use; NULL
 * if the row is damaged (then m->damaged is set and m->err says so). */
ment *cairn__mem_row(cairn_mem *m, size_t g, size_t i);

/* The seq every index file in use covers up to (0: none). */
uint64_t cairn__mem_index_covered(const cairn_mem *m);

/* The index file holding the memory stored at seq, or -1: after them. */
long cairn__mem_gen_of(const cairn_mem *m, uint64_t seq);

/* Memories gone (deleted, cleared, purged, merged away) over the store's
 * life as this state knows them, and memories live now. */
uint64_t cairn__mem_gone(const cairn_mem *m);
uint64_t cairn__mem_live(const cairn_mem *m);

/* Read every base row, so that cairn__mem_at never fails: for the
 * operations that visit every memory. Errors: CAIRN_ECORRUPT. */
int cairn__mem_read_all(cairn_mem *m);

/* Every entry, base rows first: i < cairn__mem_total(m), after
 * cairn__mem_read_all. */
size_t cairn__mem_total(const cairn_mem *m);
ment *cairn__mem_at(cairn_mem *m, size_t i);
/* Entry i read from its file if it was not (NULL: the file is damaged,
 * cairn__errbuf(m) says where); no cairn__mem_read_all needed. */
ment *cairn__mem_at_loaded(cairn_mem *m, size_t i);
/* The seq of entry i, without reading the rest of it. */
uint64_t cairn__mem_seq_at(const cairn_mem *m, size_t i);

/* The entry whose store record is seq, or NULL. */
ment *cairn__mem_find_seq(cairn_mem *m, uint64_t seq);

/* The namespace's number, created if asked; -1 if absent (or no memory). */
long cairn__mem_ns_index(cairn_mem *m, const char *name, size_t len, int create);

int cairn__mem_expired(const ment *x, int64_t now);

/* cairn_mem_recall with a filter of the caller's besides o's: pred(user,
 * x) is asked, with m->mu held, of each memory the other filters let
 * through (it reads x and nothing else of m); 0 leaves x out. */
int cairn__mem_recall_pred(cairn_mem *m, const char *query, const cairn_recall_opts *o,
                           int (*pred)(void *user, const ment *x), void *pred_user,
                           cairn_recall_hit **hits, size_t *n_hits);

/* Every live, unexpired memory of the namespaces ns[0..n_ns) (NULL: all)
 * stored at from_seq or later, oldest first, to fn with the handle's lock
 * held (fn reads x and may call cairn__mem_fail, nothing else of m); a
 * nonzero return stops the walk and is returned. Catches up with the log
 * first. */
int cairn__mem_scan(cairn_mem *m, const char *const *ns, size_t n_ns, uint64_t from_seq,
                    int (*fn)(void *user, cairn_mem *m, const ment *x), void *user);

/* Fill *c with copies of x's fields (cairn_memory owns them). */
int cairn__mem_copy_out(cairn_mem *m, const ment *x, cairn_memory *c);
/* x's content: in RAM for a memory stored after the index files, else
 * read from its store record in the log (an index file keeps no copy,
 * format-spec/memindex.md), and checked against the row (id, length,
 * hash) into *text, valid until the next call on m (a later read may
 * overwrite it). Errors, with m's message: CAIRN_ECORRUPT,
 * CAIRN_ECHECKSUM, CAIRN_EIO, CAIRN_ENOMEM. */
int cairn__mem_text(cairn_mem *m, const ment *x, const char **text);

/* Append r as a record of namespace ns, then apply it in RAM. */
int cairn__mem_write_rec(cairn_mem *m, const char *ns, const memrec *r, uint64_t *seq_out);

/* Append the n records rs[i] (of namespace nss[i]) as one commit, each
 * marked with its place in it when n >= 2 (batch.h: a replay applies all
 * of them or none), then apply them in RAM. The records' strings must not
 * point into this handle's entries (applying other handles' records
 * first may move them). */
int cairn__mem_write_commit(cairn_mem *m, const char *const *nss, const memrec *const *rs,
                            size_t n);

/* Delete n live entries with one append (a batch of memory.delete records
 * with this reason, one commit), then in RAM. */
int cairn__mem_delete_many(cairn_mem *m, ment *const *xs, size_t n, const char *reason);

/* The same with a reason each (reasons[i] for xs[i]; NULL: `reason`). */
int cairn__mem_delete_each(cairn_mem *m, ment *const *xs, size_t n, const char *reason,
                           const char *const *reasons);

/* The limit of live memories per namespace in force (0: none): the
 * handle's option if it has one, else the store's setting as the handle's
 * view of the MANIFEST holds it, looked up at each call (a change takes
 * effect without reopening). *what (may be NULL) names which, for a
 * message. */
uint64_t cairn__mem_limit(cairn_mem *m, const char **what);

/* Refuse a change that would take namespace ns to `would` live memories,
 * past lim (`what` from cairn__mem_limit): CAIRN_EINVAL, with a message
 * saying so, that nothing was written, and how to change the setting. */
int cairn__mem_limit_fail(cairn_mem *m, const char *ns, uint64_t would, uint64_t lim,
                          const char *what);

/* importance x 0.5^(days since last access / half-life). */
double cairn__mem_decayed(const cairn_mem *m, const ment *x, int64_t now);

/* The live entry with this id, or NULL. */
ment *cairn__mem_find_id(cairn_mem *m, const char *id);

/* The live entry of namespace ns with exactly this content, or NULL. */
ment *cairn__mem_find_dup(cairn_mem *m, const char *ns, const char *content, size_t len);

/* A fresh id ("m" + 16 hex digits) no live memory has, into id. */
void cairn__mem_new_id(cairn_mem *m, const char *content, char *id);

/* Embed n texts with the handle's embedder into out (n x emb.dim).
 * Errors: CAIRN_EUNAVAIL (no embedder callback), CAIRN_EIO (the embedder
 * failed: m->err says why), CAIRN_EINVAL (a value not finite). */
int cairn__mem_embed(cairn_mem *m, const char *const *texts, const size_t *lens, size_t n,
                     float *out);

/* Whether vectors named name, of dim values, may join the store; if not,
 * m->err says why (CAIRN_EINVAL). */
int cairn__mem_vec_compatible(cairn_mem *m, const char *name, uint32_t dim);

/* Fold the entries of ACCESS no record has folded yet into the log: one
 * memory.access record (format-spec/memory.md, the fold form) counting
 * each memory's accesses and its last, after ACCESS is replaced by a fresh
 * file (format-spec/access.md, "Folding"). mu held, a writable handle (on a
 * read-only one it does nothing). A failure of the side file (it cannot be
 * replaced, read) only leaves the entries pending: CAIRN_OK. Errors: those
 * of appending the record (cairn_append's), CAIRN_ENOMEM; the entries it
 * read are then lost (access statistics only). */
int cairn__mem_access_fold(cairn_mem *m);

/* After a write (mu held, no entry pointer kept): write the RAM tail out
 * as a generation once it holds MEM_FLUSH_ROWS memories. Best effort. */
void cairn__mem_flush_if_due(cairn_mem *m);

/* Tests: flush once the RAM tail holds `rows` memories (at least 1)
 * rather than MEM_FLUSH_ROWS, so that a test of flushes stores a few
 * thousand memories, not 65,536 (under the sanitizers, tens of seconds). */
void cairn__mem_set_flush_rows(cairn_mem *m, size_t rows);

/* Write one whole memory index file in place of every file in use (mu
 * held): a purge, which must leave no file holding the memory's text. */
int cairn__mem_checkpoint_whole(cairn_mem *m);

/* Call every listener with ev (mu NOT held). */
void cairn__mem_emit(cairn_mem *m, const cairn_mem_event *ev);

/* The hooks, copied under mu (mu NOT held). */
cairn_mem_hooks cairn__mem_hooks(cairn_mem *m);

#endif /* CAIRN_MEMSTATE_H */
