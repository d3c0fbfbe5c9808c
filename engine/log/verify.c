/*
 * verify.c - cairn_verify(): read every file of the store and check every
 * checksum and structural rule, reporting each problem with file and offset
 * instead of stopping at the first. It never modifies the store.
 *
 * A torn tail of the active segment (bytes after the last valid record) is
 * what a crash leaves and what the next writer open truncates; it is a
 * problem only when no writer is live, since a live writer's buffer may be
 * mid-write. Whether a writer is live is probed with a shared, non-blocking
 * flock on LOCK (it fails while the writer holds its exclusive lock).
 */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "alloc.h"
#include "head.h"
#include "io.h"
#include "seqfile.h"

typedef struct vctx {
    cairn_verify_fn fn;
    void *user;
    const char *file;
    uint64_t problems;
    const cairn_head *want; /* verify --head: which problems bear on it */
    int for_head;           /* the segment being checked holds seqs up to want's */
    uint64_t head_problems; /* problems in such segments */
} vctx;

static void problem(vctx *c, const char *file, uint64_t off, int code, const char *msg)
{
    c->problems++;
    c->head_problems += c->for_head;
    if (c->fn != NULL)
        c->fn(c->user, file, off, code, msg);
}

static void sealed_problem(void *user, uint64_t off, int code, const char *msg)
{
    vctx *c = user;
    problem(c, c->file, off, code, msg);
}

/* Scan a log-form segment from its header, through the fd the view pinned
 * (the sealer may unlink the name at any moment; the fd keeps the file). */
static void verify_log(cairn_db *db, vctx *c, const manifest_entry *x, const seg_ref *s,
                       int live)
{
    uint8_t h[64];
    logseg seg;
    logseg_stop stop;
    cairn__err e;
    size_t got;
    int rc;

    memset(&seg, 0, sizeof seg);
    memcpy(seg.name, s->log.name, sizeof seg.name);
    seg.fd = dup(s->log.fd);
    if (seg.fd < 0) {
        problem(c, s->log.name, 0, CAIRN_EIO, "cannot duplicate the segment's descriptor");
        return;
    }
    rc = cairn__io_read(db->io, "verify.read", seg.fd, h, sizeof h, 0, &got, seg.name, &e);
    if (rc == CAIRN_OK)
        rc = cairn__logseg_header_decode(h, got, &seg, seg.name, &e);
    if (rc == CAIRN_OK) {
        seg.end = sizeof h;
        rc = cairn__logseg_scan(db->io, db->a, &seg, &stop, &e);
    }
    if (rc != CAIRN_OK) {
        problem(c, s->log.name, 0, rc, e.msg);
        cairn__logseg_free(db->io, db->a, &seg);
        return;
    }
    if (stop.offset < stop.file_size) {
        char m[CAIRN_ERRMSG_MAX];
        uint64_t max_seq = 0;
        int found = 0;
        cairn__logseg_probe(db->io, db->a, &seg, stop.offset, stop.file_size, &found, &max_seq,
                            &e);
        if (found) {
            snprintf(m, sizeof m, "damaged record after record %llu; valid records up to seq "
                     "%llu follow (a writer open moves them aside to a .damaged file)",
                     (unsigned long long)(seg.base_seq + seg.n - 1), (unsigned long long)max_seq);
            problem(c, seg.name, stop.offset,
                    stop.why == REC_BAD_SUM ? CAIRN_ECHECKSUM : CAIRN_ECORRUPT, m);
        } else if (x->kind != SEG_ACTIVE || !live) {
            /* a torn tail after the head's seq leaves its history whole */
            int keep = c->for_head;
            if (x->kind == SEG_ACTIVE && c->want != NULL && seg.n > 0 &&
                seg.base_seq + seg.n - 1 >= c->want->seq)
                c->for_head = 0;
            snprintf(m, sizeof m, "%s after record %llu; %llu bytes follow%s",
                     stop.why == REC_END ? "unreadable bytes" : cairn__record_result_str(stop.why),
                     (unsigned long long)(seg.base_seq + seg.n - 1),
                     (unsigned long long)(stop.file_size - stop.offset),
                     x->kind == SEG_ACTIVE ? " (torn tail: the next writer open truncates it)"
                                           : "");
            problem(c, seg.name, stop.offset,
                    stop.why == REC_BAD_SUM ? CAIRN_ECHECKSUM : CAIRN_ECORRUPT, m);
            c->for_head = keep;
        }
    }
    if (x->kind == SEG_CLOSED && seg.n != x->count) {
        char m[CAIRN_ERRMSG_MAX];
        snprintf(m, sizeof m, "%zu valid records, the manifest says %llu", seg.n,
                 (unsigned long long)x->count);
        problem(c, seg.name, stop.offset, CAIRN_ECORRUPT, m);
    }
    cairn__logseg_free(db->io, db->a, &seg);
}

/* Files recovery moved damaged bytes into: the records in them are not in
 * the log, so they stay a problem until an operator deals with them. */
static void report_set_aside(cairn_db *db, vctx *c)
{
    DIR *d = cairn__io_opendir(db->dirfd);
    struct dirent *de;

    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n > 8 && strcmp(de->d_name + n - 8, ".damaged") == 0)
            problem(c, de->d_name, 0, CAIRN_ECORRUPT,
                    "bytes set aside by recovery (damage with valid records after it); "
                    "the records in this file are not in the log");
    }
    closedir(d);
}

/* The MANIFEST records that every record up to synced_seq was durable; a
 * log that hands out fewer numbers lost whole records at its tail (a cut at
 * a record boundary leaves nothing a scan could see). Once a writer has
 * opened the store it has retired those numbers, and this no longer holds. */
static void report_lost_tail(cairn_db *db, vctx *c, view *v)
{
    seg_ref *act = v->segs[v->m.n - 1];
    uint64_t handed = cairn__handed_seq(db);
    char m[CAIRN_ERRMSG_MAX];

    if (v->m.synced_seq <= handed)
        return;
    snprintf(m, sizeof m, "the log ends at seq %llu, but the MANIFEST records seq %llu as "
             "durable: records %llu..%llu are lost (the next writer open retires their numbers)",
             (unsigned long long)handed, (unsigned long long)v->m.synced_seq,
             (unsigned long long)(handed + 1), (unsigned long long)v->m.synced_seq);
    problem(c, act->log.name, act->sealed ? act->map_len : act->log.end, CAIRN_ECORRUPT, m);
}

/* The chain's check runs on a thread of its own beside the structure's
 * (each reads every sealed block): its problems are kept and handed to the
 * caller's fn after, in order, from the calling thread. */
typedef struct kept_problem {
    char file[64];
    uint64_t off;
    int code;
    char msg[CAIRN_ERRMSG_MAX];
} kept_problem;

typedef struct chain_run {
    cairn_db *db;
    const view *v;
    const cairn_head *want;
    cairn_verify_report rep;
    kept_problem *kept;
    size_t n_kept, cap_kept;
    int lost;                /* a problem that could not be kept (no memory) */
} chain_run;

static void keep_problem(void *user, const char *file, uint64_t off, int code, const char *msg)
{
    chain_run *r = user;
    kept_problem *k;
    if (r->n_kept == r->cap_kept) {
        size_t cap = r->cap_kept ? 2 * r->cap_kept : 16;
        kept_problem *p = cairn__realloc(r->db->a, r->kept, cap * sizeof *p);
        if (p == NULL) {
            r->lost++;
            return;
        }
        r->kept = p;
        r->cap_kept = cap;
    }
    k = &r->kept[r->n_kept++];
    snprintf(k->file, sizeof k->file, "%s", file ? file : "-");
    k->off = off;
    k->code = code;
    snprintf(k->msg, sizeof k->msg, "%s", msg ? msg : "");
}

static void *chain_main(void *arg)
{
    chain_run *r = arg;
    cairn__verify_chain(r->db, r->v, r->want, keep_problem, r, &r->rep);
    return NULL;
}

int cairn_verify(cairn_db *db, cairn_verify_fn fn, void *user, uint64_t *problems_out)
{
    cairn_verify_report r;
    int rc = cairn_verify_head(db, NULL, fn, user, &r);
    if (problems_out != NULL)
        *problems_out = rc == CAIRN_OK ? r.problems : 0;
    return rc;
}

int cairn_verify_head(cairn_db *db, const cairn_head *want, cairn_verify_fn fn, void *user,
                      cairn_verify_report *out)
{
    vctx c = {fn, user, NULL, 0, want, 0, 0};
    cairn_verify_report local;
    uint64_t *problems_out;
    manifest m;
    cairn__err e;
    view *v;
    chain_run run;
    pthread_t th;
    int live, threaded, rc;

    if (out == NULL)
        out = &local;
    memset(out, 0, sizeof *out);
    problems_out = &out->problems;
    /* The manifest on disk, as a fresh reader would see it. */
    rc = cairn__manifest_read(db->io, db->dirfd, db->a, &m, &e);
    if (rc != CAIRN_OK) {
        problem(&c, MANIFEST_NAME, 0, rc, e.msg);
        if (problems_out)
            *problems_out = c.problems;
        return CAIRN_OK;
    }
    cairn__manifest_free(db->a, &m);

    pthread_mutex_lock(&db->mu);
    rc = db->dead ? CAIRN_OK : cairn__refresh(db);
    v = db->view;
    atomic_fetch_add(&v->refs, 1);
    pthread_mutex_unlock(&db->mu);
    if (rc != CAIRN_OK)
        problem(&c, MANIFEST_NAME, 0, rc, cairn_errmsg(db));
    live = cairn__writer_live(db);
    memset(&run, 0, sizeof run);
    run.db = db;
    run.v = v;
    run.want = want;
    /* beside the structure's check, but never with a caller's I/O table
     * (it may not expect two threads) */
    threaded = !db->caller_io && pthread_create(&th, NULL, chain_main, &run) == 0;
    report_lost_tail(db, &c, v);
    for (size_t i = 0; i < v->m.n; i++) {
        const manifest_entry *x = &v->m.e[i];
        seg_ref *s = v->segs[i];
        c.for_head = want != NULL && x->base_seq <= want->seq;
        if (x->kind == SEG_SEALED) {
            c.file = s->log.name;
            cairn__sealed_verify(s->map, s->map_len, db->a, s->log.name, sealed_problem, &c);
            if (cairn__sealed_span(&s->s) != x->count || s->s.base_seq != x->base_seq) {
                problem(&c, s->log.name, s->map_len - SEAL_FOOTER_SIZE, CAIRN_ECORRUPT,
                        "record count or base_seq disagrees with the manifest");
            }
        } else {
            verify_log(db, &c, x, s, live);
        }
    }
    c.for_head = 0; /* set-aside files: records not in the log, which the chain finds */
    report_set_aside(db, &c);
    /* the derived files the MANIFEST lists: there, the bytes it names */
    cairn__seqfile_verify(db, fn, user, &c.problems);
    {
        /* A head is proven only where the log's structure holds up to its
         * seq: a damaged block or hole can read as another history than the
         * one hashed (a torn tail after it cannot). */
        cairn_verify_report chain;
        if (threaded)
            pthread_join(th, NULL);
        else
            chain_main(&run);
        for (size_t k = 0; k < run.n_kept; k++)
            if (fn != NULL)
                fn(user, run.kept[k].file, run.kept[k].off, run.kept[k].code, run.kept[k].msg);
        if (run.lost > 0 && fn != NULL)
            fn(user, MANIFEST_NAME, 0, CAIRN_ENOMEM, "no memory to keep the hash chain's problems");
        cairn__free(db->a, run.kept);
        chain = run.rep;
        chain.problems += (uint64_t)run.lost;
        chain.head_proven = chain.head_proven && c.head_problems == 0 && run.lost == 0;
        c.problems += chain.problems;
        *out = chain;
    }
    cairn__view_release(db, v);
    if (problems_out)
        *problems_out = c.problems;
    return CAIRN_OK;
}
