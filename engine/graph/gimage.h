/*
 * gimage.h - the graph file (format-spec/graph.md): the reflexion state
 * (nodes, edges, patterns, episodes) folded up to one sequence number,
 * with CSR adjacency lists both ways, an id table and a 4-gram index of
 * the case-folded labels, written once and then read in place through
 * mmap. Causal BFS walks its CSR arrays directly.
 *
 * Like the memory index it is a cache of the log, never the source of
 * truth: a missing, stale or damaged file is set aside and the state
 * rebuilt from the log. Every section is checked against its sum, and
 * every offset and count against the file, when it is opened, so the
 * accessors below can trust what they read.
 */
#ifndef CAIRN_GIMAGE_H
#define CAIRN_GIMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"
#include "cairn_sys.h"
#include "logbind.h"
#include "seqfile.h"
#include "status.h"

#define GI_NAME_MAX 48
#define GI_BIND_OFF 136 /* the binding block in the header (logbind.h) */
/* 3: the header binds the file to its log (logbind.h); 4: the common file
 * header (filehdr.h) at 0; 5: nodes and edges in packed columns */
#define GI_VERSION 5
#define GI_NONE UINT32_MAX

/* The sections, in file order. The first GI_COLUMNS are packed columns
 * (format-spec/graph.md, "Packed columns"): a node's or an edge's field,
 * one value for each, in as few bytes as the file's values need. */
enum {
    GI_N_KEY, GI_N_CREATED, GI_N_SUCCESS, GI_N_FREQ, GI_N_TYPE, GI_N_LABEL, GI_N_LABEL_LEN,
    GI_N_FOLD, GI_N_FOLD_LEN, GI_N_EPS, GI_N_NEPS,
    GI_E_TYPE, GI_E_EVIDENCE, GI_E_WEIGHT, GI_E_CREATED, GI_E_EPS, GI_E_NEPS,
    GI_COLUMNS,
    GI_OUT_OFF = GI_COLUMNS, GI_OUT_DST, GI_IN_OFF, GI_IN_SRC, GI_IN_EID, GI_IDTAB,
    GI_GRAM_KEY, GI_GRAM_OFF, GI_GRAM_POST, GI_EPREFS, GI_NAMES, GI_EPISODES, GI_PATTERNS, GI_BLOB,
    GI_SECTIONS
};

/* A packed column as read: value i is base + the width bytes at p + i
 * width (little-endian), modulo 2^64. */
typedef struct gi_col {
    const uint8_t *p;
    uint64_t base;
    uint32_t width;          /* 0..8 */
} gi_col;

typedef struct gimage {
    uint8_t *map;
    size_t len;
    char name[GI_NAME_MAX];
    cairn__fileid id;         /* the file the name held when mapped */
    uint64_t covered, skipped;
    int64_t updated;
    uint64_t n_nodes, n_edges, n_patterns, n_names, n_episodes, n_gram, n_post, tcap;
    uint64_t bad_off;         /* after a failed open: the file offset of the problem */
    uint32_t version;         /* the header's (CAIRN_EVERSION when not GI_VERSION) */
    cairn__logbind bind;      /* the log it was folded from */
    const uint8_t *sec[GI_SECTIONS];
    uint64_t sec_len[GI_SECTIONS];
    gi_col col[GI_COLUMNS];
} gimage;

/* A node, an edge, a pattern, an episode as the writer takes them and the
 * reader gives them back (strings point into the mapping; eps are episode
 * name numbers). */
typedef struct gi_node {
    uint64_t key;
    const char *label, *fold;
    uint32_t label_len, fold_len;
    uint32_t type;
    uint64_t frequency;
    double success;
    int64_t created;
    const uint32_t *eps;
    uint32_t n_eps;
} gi_node;

typedef struct gi_edge {
    uint32_t src, dst, type;
    uint64_t evidence;
    double weight;
    int64_t created;
    const uint32_t *eps;
    uint32_t n_eps;
} gi_edge;

typedef struct gi_str {
    const char *p;
    uint32_t len;
} gi_str;

typedef struct gi_pattern {
    uint64_t key;
    gi_str name, desc, trigger, action;
    double success;
    uint64_t occurrences;
    int64_t last_used, created;
    const uint32_t *eps;
    uint32_t n_eps;
} gi_pattern;

typedef struct gi_episode {
    uint32_t name;
    uint32_t outcome;
    uint32_t processed;
    uint64_t seq;
    int64_t ts;
} gi_episode;

/* ---- reading ---- */

/* Unmap, keeping what names a problem (name, bad_off, version) for the
 * caller's message. */
void cairn__gi_close_keep_name(gimage *g);

/* Map the newest graph file of the store directory whose covered seq is at
 * most max_seq. CAIRN_ENOTFOUND: none. Any other error (the file named in
 * e): unusable; g->name says which, for the caller to set aside. */
int cairn__gi_open(gimage *g, const cairn_io *io, int dirfd, uint64_t max_seq, cairn__err *e);

/* Every check of cairn__gi_open over bytes already in g->map (8-byte
 * aligned, g->len long): for tests and fuzzing. Does not unmap. */
int cairn__gi_parse(gimage *g, cairn__err *e);

/* Unmap; accepts a zeroed gimage. */
void cairn__gi_close(gimage *g);

void cairn__gi_node(const gimage *g, uint32_t i, gi_node *out);
/* Edge i (its src found in the out-edge offsets: O(log nodes)). */
void cairn__gi_edge(const gimage *g, uint32_t i, gi_edge *out);
/* Edge i, read in increasing order: *src is the source of the edge read
 * before (0 at first), moved on as i passes its out-edges (a walk over
 * every edge costs O(edges + nodes), not O(edges log nodes)). */
void cairn__gi_edge_next(const gimage *g, uint32_t i, uint32_t *src, gi_edge *out);
/* Edge i's type alone. */
uint32_t cairn__gi_edge_type(const gimage *g, uint32_t i);
void cairn__gi_pattern(const gimage *g, uint32_t i, gi_pattern *out);
void cairn__gi_episode(const gimage *g, uint32_t i, gi_episode *out);
gi_str cairn__gi_name(const gimage *g, uint32_t i);

/* Out-edges of node v: targets out_dst[*first .. *first + *n), which are
 * also the edge numbers (edges are sorted by source). */
const uint32_t *cairn__gi_out(const gimage *g, uint32_t v, uint32_t *first, uint32_t *n);
/* In-edges of node v: sources and edge numbers, *n of each. */
const uint32_t *cairn__gi_in(const gimage *g, uint32_t v, const uint32_t **eids, uint32_t *n);

/* A hint to the CPU, no effect on results: stage 0 asks for v's out- (or
 * in-) row offset, stage 1 (after stage 0 had time to land) for the row. */
void cairn__gi_prefetch_row(const gimage *g, uint32_t v, int in, int stage);

/* The node whose key is key, or GI_NONE. */
uint32_t cairn__gi_find_key(const gimage *g, uint64_t key);

/* The first node (lowest number) whose folded label contains the folded
 * text q, or GI_NONE. */
uint32_t cairn__gi_find_label(const gimage *g, const char *q, size_t len);

/* One 4-gram's postings (node numbers, ascending, u32 little-endian), as
 * a cursor. */
typedef struct gi_plist {
    const uint8_t *post;
    uint64_t n, at;
} gi_plist;

/* The lowest node number in every list (the three shortest are joined;
 * the order of l changes) for which accept(ctx, v) holds, or GI_NONE. */
uint32_t cairn__gi_join(gi_plist *l, size_t nl, int (*accept)(const void *ctx, uint32_t v),
                        const void *ctx);

/* Whether hay holds q (len 0: always). */
int cairn__gi_contains(const char *hay, size_t hlen, const char *q, size_t len);

/* ---- writing ---- */

typedef struct gi_in {
    uint64_t covered, skipped;
    int64_t updated;
    cairn__logbind bind;      /* cairn__logbind_make for covered */
    const gi_node *nodes;     /* in node order */
    uint64_t n_nodes;
    const gi_edge *edges;     /* sorted by (src, dst, type), no two equal */
    uint64_t n_edges;
    const gi_pattern *patterns;
    uint64_t n_patterns;
    const gi_str *names;
    uint64_t n_names;
    const gi_episode *episodes;
    uint64_t n_episodes;
    /* Optional: called once the temp file is written and fsynced, just
     * before it is renamed into place; a nonzero return gives the write up
     * (the temp file removed, that status returned). */
    int (*gate)(void *user);
    void *gate_user;
    uint64_t temp_salt;       /* nonzero: the temp file's own name (seqfile.h) */
} gi_in;

/* Write the file for `in` (temp file, fsync, the gate if any, rename,
 * fsync the directory). The caller lists it in the MANIFEST (which drops
 * the files it replaces: cairn__seqfile_change_apply). The bytes are a
 * function of `in` alone. Errors: CAIRN_EIO, CAIRN_EFULL, CAIRN_ENOMEM,
 * CAIRN_EINVAL (past the format's limits), or the gate's. */
int cairn__gi_write(const cairn_io *io, int dirfd, const gi_in *in, cairn__err *e);

/* The 4-gram keys (b0<<24 | b1<<16 | b2<<8 | b3) of a folded text,
 * distinct and ascending, into out (room for len entries); their count.
 * With pad, the text is taken with one NUL after it, so a label's every
 * 3-byte substring starts one of its 4-grams (how 3-byte queries are
 * answered). */
size_t cairn__gi_grams(const char *s, size_t len, int pad, uint32_t *out);

#endif /* CAIRN_GIMAGE_H */
