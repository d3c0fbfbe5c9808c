/*
 * rstate.h - the reflexion state, shared by its files: reflex.c (state,
 * fold, open/close/checkpoint), causal.c (nodes, edges, paths), pattern.c,
 * episode.c, update.c (causal update and import). Everything here is used
 * with cairn_reflex.mu held.
 *
 * Numbering: nodes 0 .. gi.n_nodes-1 are the graph file's, in its order;
 * the nodes folded after it follow (dn[i - base_n]). Edges likewise. A
 * file row that changes is copied into its overlay slot (bn / be, calloc'd
 * so unread rows cost no RAM) and read from there on.
 */
#ifndef CAIRN_RSTATE_H
#define CAIRN_RSTATE_H

#include <pthread.h>
#include <stdint.h>

#include "batch.h"
#include "cairn.h"
#include "dlabel.h"
#include "ggen.h"
#include "gimage.h"
#include "status.h"

/* A small JSON text builder for record payloads. */
typedef struct rjson {
    char *p;
    size_t len, cap;
    int oom;
} rjson;
void cairn__rj_raw(rjson *j, const char *s, size_t len);
void cairn__rj_str(rjson *j, const char *s, size_t len); /* quoted, escaped */
void cairn__rj_num(rjson *j, double v);                  /* round-trips exactly */
void cairn__rj_key(rjson *j, const char *key);           /* ,"key": (no comma first) */

#define R_NONE UINT32_MAX
/* Graph records folded since the graph file before close writes a new one. */
#define R_CHECKPOINT_MIN 1000

typedef struct rnode {
    uint64_t key;
    char *label, *fold;       /* owned unless borrowed from the mapping */
    uint32_t label_len, fold_len;
    uint32_t type;
    uint32_t present;         /* overlay slot in use / delta node */
    uint32_t owns;            /* label and fold are malloc'd */
    uint32_t gen;             /* epoch of its last change (0: as in the whole file) */
    uint64_t frequency;
    double success;
    int64_t created;
    uint32_t *eps;
    uint32_t n_eps, cap_eps;
} rnode;

typedef struct redge {
    uint32_t src, dst, type, present;
    uint64_t evidence;
    double weight;
    int64_t created;
    uint32_t *eps;
    uint32_t n_eps, cap_eps;
    uint32_t next_out, next_in; /* delta edges: the next of the same source /
                                   target, edge number + 1; 0 ends */
    uint32_t gen;
} redge;

typedef struct rpat {
    uint64_t key;
    char *name, *desc, *trigger, *action;
    double success;
    uint64_t occurrences;
    int64_t last_used, created;
    uint32_t *eps;
    uint32_t n_eps, cap_eps;
    uint32_t gen;
} rpat;

typedef struct repi {
    uint32_t name;            /* the episode id ("episode-..."), a name number */
    uint32_t outcome;         /* 0 success, 1 partial, 2 failure */
    uint32_t processed;       /* folded into the graph by an update */
    uint64_t seq;             /* its newest episode record */
    int64_t ts;               /* its timestamp, ms */
    uint32_t gen;
} repi;

/* The graph files the state was read from or written to, oldest first:
 * the whole file (position 0), then the generations lying on it. Epochs
 * number the changes: a row's `gen` is the epoch of its last change, and
 * file p holds every change of an epoch up to epoch_end. */
#define RG_CHAIN_MAX 12
typedef struct rchain {
    uint64_t seq;             /* its covered seq (its name) */
    uint32_t epoch_end;       /* the whole file: 0 */
    uint32_t counts[GG_TABLES]; /* rows of each table as of it */
    uint64_t rows;            /* rows the file holds: the policy's size */
} rchain;

struct cairn_reflex {
    cairn_db *db;
    int fold_labels;          /* the store's label rule is MAN_LABELS_FOLDED: node
                                 labels and pattern names that differ only in
                                 case are one */
    pthread_mutex_t mu;
    /* The whole-file merge in the background (rcheckpoint.c; kept by
     * cairn__rx_free_state, which clears what follows): with it, a
     * close writes a generation and leaves the whole file to the thread,
     * until the generations hold half as many rows as the whole file. */
    int bg_merge;             /* a writable handle with background threads */
    struct cairn__bgwork *merger; /* its worker (bgwork.h), started at open
                                 when due, freed by the close; or NULL */
    gimage gi;                /* gi.map NULL: no graph file in use */
    uint32_t base_n, base_m;
    rnode *bn;                /* base_n overlay slots */
    redge *be;                /* base_m overlay slots */
    rnode *dn;
    size_t n_dn, cap_dn;
    redge *de;
    size_t n_de, cap_de;
    uint32_t *ntab;           /* delta nodes by key: node number + 1 */
    size_t ntab_cap;
    uint32_t *etab;           /* delta edges by (src, dst, type): edge number + 1 */
    size_t etab_cap;
    uint32_t *dout, *din;     /* per node: first delta edge out / in, + 1 */
    size_t adj_cap;
    char **names;             /* episode ids, interned */
    uint32_t *name_len;
    size_t n_names, cap_names;
    uint32_t *name_tab;       /* name number + 1 */
    size_t name_tab_cap;
    repi *epi;
    size_t n_epi, cap_epi;
    uint32_t *epi_by_name;    /* per name number: episode + 1 (sized cap_names) */
    rpat *pat;
    size_t n_pat, cap_pat;
    uint64_t folded;          /* last log seq folded in */
    uint64_t delta_records;   /* graph records folded after the file */
    uint64_t skipped;
    cairn__batch batch;       /* replay: the last commit looked up (batch.h) */
    int64_t updated;
    int stale;
    int wait_rc;              /* a fold while waiting for the lock failed: the
                                 turn's error (reflex.c, fold_waiting) */
    char wait_err[CAIRN_ERRMSG_MAX];
    struct rbfs *bfs;         /* the path search's scratch (bfs.c) */
    dlabel dl;                /* label index of the delta nodes (dlabel.c) */
    rchain chain[RG_CHAIN_MAX];
    size_t n_chain;           /* 0: no graph file in use */
    uint32_t epoch;           /* the changes since the newest file's */
    uint32_t *tnodes, *tedges; /* rows of the files changed since the whole
                                  file: each once per epoch it changed in */
    size_t n_tnodes, cap_tnodes, n_tedges, cap_tedges;
    char note[CAIRN_ERRMSG_MAX]; /* why a graph file was set aside */
    /* its error detail: per thread, cairn__errbuf(r) */
};

int cairn__rx_fail(cairn_reflex *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline uint32_t rx_nodes(const cairn_reflex *r)
{
    return r->base_n + (uint32_t)r->n_dn;
}

static inline uint32_t rx_edges(const cairn_reflex *r)
{
    return r->base_m + (uint32_t)r->n_de;
}

/* Node / edge i as a view (strings not NUL-terminated past their length
 * in general; file strings are). */
void cairn__rx_node(const cairn_reflex *r, uint32_t i, gi_node *out);
void cairn__rx_edge(const cairn_reflex *r, uint32_t i, gi_edge *out);
/* The same for i in increasing order (cairn__gi_edge_next; *src 0 at first). */
void cairn__rx_edge_next(const cairn_reflex *r, uint32_t i, uint32_t *src, gi_edge *out);

/* The node with this key / exactly this label, or R_NONE; *key_out (may be
 * NULL) gets the key the label has or would get. */
uint32_t cairn__rx_find_key(const cairn_reflex *r, uint64_t key);
/* Are two pattern names (or labels) one under the store's rule? */
int cairn__rx_same_name(const cairn_reflex *r, const char *a, const char *b);

/* A pattern's key under the store's rule. */
uint64_t cairn__rx_name_key(const cairn_reflex *r, const char *name);

uint32_t cairn__rx_find_label(const cairn_reflex *r, const char *label, size_t len,
                              uint64_t *key_out);

/* The edge (s, d, t) by node numbers, or R_NONE. */
uint32_t cairn__rx_find_edge(const cairn_reflex *r, uint32_t s, uint32_t d, uint32_t t);

/* The name number of an episode id, interned if `add`; R_NONE if absent
 * (or no memory when adding). */
uint32_t cairn__rx_name(cairn_reflex *r, const char *s, size_t len, int add);

/* A malloc'd, NUL-terminated copy of s[0..n); NULL when out of memory. */
char *cairn__rx_dup(const char *s, size_t n);

/* The folded label (Unicode case folding) of s into *out (malloc'd).
 * Errors: CAIRN_EINVAL (not UTF-8), CAIRN_ENOMEM. */
int cairn__rx_fold(const char *s, size_t len, char **out, size_t *out_len);

/* Apply one graph change in RAM, as its record says (ts: the record's
 * time). Return CAIRN_EINVAL for a change that cannot apply (counted as
 * skipped at replay), CAIRN_ENOMEM. */
int cairn__rx_apply_node(cairn_reflex *r, uint32_t type, const char *label, size_t len,
                         const char *episode, size_t ep_len, int64_t ts, uint32_t *idx_out);
int cairn__rx_apply_edge(cairn_reflex *r, uint64_t src_key, uint64_t dst_key, uint32_t type,
                         double weight, const char *episode, size_t ep_len, int64_t ts,
                         uint32_t *idx_out);
int cairn__rx_apply_pattern(cairn_reflex *r, const cairn_pattern_spec *s, int64_t ts,
                            size_t *idx_out);
int cairn__rx_apply_episode(cairn_reflex *r, const char *id, size_t len, uint32_t outcome,
                            int64_t ts_episode, uint64_t seq);
int cairn__rx_apply_update(cairn_reflex *r, const char *id, size_t len);

/* One change, as a record says it (and as its payload is made from). */
typedef struct rchange {
    uint16_t rec;             /* CAIRN_REC_* */
    uint32_t type;            /* node / edge type; an episode's outcome */
    const char *label;        /* node label; episode id */
    size_t len;
    uint64_t src, dst;        /* edge: node keys */
    double weight;
    const char *episode;      /* NULL: none */
    size_t ep_len;
    cairn_pattern_spec pat;
    int64_t created;          /* 0: the record's time (imports carry one) */
    int64_t ep_ts;            /* episode: its timestamp */
    const char *ep_json;      /* episode: the record's payload */
    size_t ep_json_len;
    const char *const *ids;   /* update: the episode ids */
    const size_t *id_lens;
    size_t n_ids;
} rchange;

/* Apply c as the record at seq with time ts. CAIRN_EINVAL / ENOTFOUND: it
 * cannot apply (skipped at replay); CAIRN_ENOMEM. */
int cairn__rx_apply(cairn_reflex *r, const rchange *c, uint64_t seq, int64_t ts);

/* The payload of c into j. */
void cairn__rx_encode(const rchange *c, rjson *j);

/* Apply one record of the log (any type; others are passed over). */
int cairn__rx_apply_record(cairn_reflex *r, const cairn_record *rec);

/* Fold what the log holds past r->folded. */
int cairn__rx_catch_up(cairn_reflex *r);
/* A change that reads the state and commits (mu held): begin takes the
 * store's writer lock (mu released while it waits) and catches up, so
 * nothing of another process comes between the checks and the commit; end
 * writes the records and lets the lock go, returning rc (or that write's
 * error). A read-only handle gets CAIRN_EPERM from begin. */
int cairn__rx_turn_begin(cairn_reflex *r);
int cairn__rx_turn_end(cairn_reflex *r, int rc);

/* Append the n changes' records (one commit) and apply them. A record
 * appended but not applied marks the handle stale. */
int cairn__rx_commit(cairn_reflex *r, const rchange *c, size_t n);

/* Set rows as a graph generation holds them (ggen.h): a number below
 * the table's size replaces that row, the table's size appends one.
 * CAIRN_ECORRUPT when the row does not fit the state (another key, an
 * existing key appended again), CAIRN_ENOMEM. */
int cairn__rx_put_node(cairn_reflex *r, uint32_t no, const gi_node *n);
int cairn__rx_put_edge(cairn_reflex *r, uint32_t no, const gi_edge *x);
int cairn__rx_put_episode(cairn_reflex *r, uint32_t no, const gi_episode *x);
int cairn__rx_put_pattern(cairn_reflex *r, uint32_t no, const gi_pattern *p);

/* rcheckpoint.c: the state's memory (all but db and mu), and the whole
 * file's small tables into RAM. */
void cairn__rx_free_state(cairn_reflex *r);
int cairn__rx_load_tables(cairn_reflex *r);

/* rgen.c: the generation lifecycle. open_chain takes the newest chain of
 * generations whose seq is at most last_seq on the whole file it lies on
 * (CAIRN_ENOTFOUND: none usable; the caller opens the whole file alone);
 * save writes what the policy says at close; chain_reset sets the chain
 * to the whole file in use alone. */
int cairn__rg_open_chain(cairn_reflex *r, uint64_t last_seq);
void cairn__rg_chain_reset(cairn_reflex *r);
/* The policy: 1 and *j when a generation holding the changes since chain
 * position j is due, 0 when the whole file is: once the generations hold a
 * quarter of the whole file's rows, or half of them with a merger in the
 * background (r->bg_merge). */
int cairn__rg_policy(const cairn_reflex *r, size_t *j);
/* Do the generations hold a quarter of the whole file's rows (a whole
 * merge is due)? */
int cairn__rg_merge_due(const cairn_reflex *r);
int cairn__rg_write(cairn_reflex *r, size_t j);
/* Verify every generation of the newest chain (cairn_reflex_verify). */
int cairn__rg_verify(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems,
                     int *checked);

/* Node ids: "n" + 16 hex digits of the key; patterns "p" + .... */
void cairn__rx_id(char prefix, uint64_t key, char *out);
int cairn__rx_parse_id(const char *s, char prefix, uint64_t *key);

/* The outcome's number (0 success, 1 partial, 2 failure), -1 if none. */
int cairn__rx_outcome(const char *s, size_t len);
extern const char *const cairn__rx_outcomes[3];

/* Copy node / edge / pattern i into the public struct. CAIRN_ENOMEM. */
int cairn__rx_copy_node(const cairn_reflex *r, uint32_t i, cairn_causal_node *out);
int cairn__rx_copy_edge(const cairn_reflex *r, uint32_t i, cairn_causal_edge *out);
int cairn__rx_copy_pattern(const cairn_reflex *r, size_t i, cairn_pattern *out);

/* Milliseconds since the epoch of an ISO 8601 date-time (or date);
 * CAIRN_EINVAL. */
int cairn__rx_parse_time(const char *s, size_t len, int64_t *ms);

#endif /* CAIRN_RSTATE_H */
