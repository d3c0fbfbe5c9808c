/*
 * compact.c - see compact.h and format-spec/compaction.md.
 */
#include "compact.h"

#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "bytes.h"
#include "head.h"
#include "hole.h"
#include "io.h"
#include "record.h"
#include "store.h"

#define V_KEEP 0
#define V_DROP 1
#define V_DEATH 2
#define V_HOLE 3   /* a hole of an earlier compaction: kept as it is (its "why"
                      says what dropped its records) */
#define V_UNREAD 4 /* dropped, no fold reads it: dropped_upto stays */

/* The most commit ends and anchors one hole lists (about 2 MiB of JSON). */
#define HOLE_LIST_MAX 65536

static void totals(const view *v, uint64_t *records, uint64_t *bytes);

/* Is seq one of the anchors? */
static int is_anchor(const uint64_t *anchors, size_t n, uint64_t seq)
{
    for (size_t k = 0; k < n; k++)
        if (anchors[k] == seq)
            return 1;
    return 0;
}

/* One sealed segment of the prefix and what becomes of its records. */
typedef struct plan_seg {
    seg_ref *s;
    uint64_t id;
    uint32_t rev;
    uint8_t *verdict;    /* one per record of the file */
    uint64_t n, drops, after; /* records; dropped now; left after (kept + holes) */
    uint64_t drop_bytes;
    uint64_t last_drop;  /* the highest seq dropped now */
    uint64_t deaths;     /* of them, records of a memory's going */
    uint64_t hole_deaths; /* the deaths its holes of earlier compactions stand for */
    int frozen;          /* holds a type-12 record a user wrote before type 12
                            was compaction's: never rewritten (it would read
                            as a hole) */
    seg_ref *fresh;      /* the file written anew, once open */
    uint64_t fresh_size;
} plan_seg;

/* Every record of a sealed file, in order, through fn (stops at a
 * status). */
static int each_in_file(cairn_db *db, seg_ref *s, uint8_t **buf, size_t *cap,
                        int (*fn)(void *u, const cairn_record *rec, size_t len, const uint8_t *raw),
                        void *u)
{
    for (uint32_t b = 0; b < s->s.block_count; b++) {
        size_t raw_len, pos = 0;
        cairn__err e;
        int rc = cairn__seg_read_block(db, s, b, NULL, buf, cap, &raw_len, &e);
        if (rc != CAIRN_OK)
            return cairn__db_fail(db, rc, &e);
        while (pos < raw_len) {
            cairn_record rec;
            size_t len;
            rec_result r = cairn__record_decode(*buf + pos, raw_len - pos, s->s.salt, &rec, &len);
            if (r != REC_OK)
                return cairn__db_failf(db, r == REC_BAD_SUM ? CAIRN_ECHECKSUM : CAIRN_ECORRUPT,
                                       "%s: block %u: %s; not compacting it (run cairn verify)",
                                       s->log.name, b, cairn__record_result_str(r));
            if ((rc = fn(u, &rec, len, *buf + pos)) != CAIRN_OK)
                return rc;
            pos += len;
        }
    }
    return CAIRN_OK;
}

typedef struct judge {
    cairn_db *db;
    plan_seg *p;
    cairn__compact_fn fn;
    void *user;
    cairn__compact_result *out;
    const uint64_t *anchors;
    size_t n_anchors;
    int run_ended;       /* the last record dropped ended its hole (an anchor) */
} judge;

static int judge_one(void *u, const cairn_record *rec, size_t len, const uint8_t *raw)
{
    judge *j = u;
    int v = V_KEEP, rc, prev;
    (void)raw;
    if (j->p->n >= j->p->s->s.record_count)
        return cairn__db_failf(j->db, CAIRN_ECORRUPT, "%s: more records than its footer says; "
                               "not compacting it (run cairn verify)", j->p->s->log.name);
    if (j->p->s->s.version >= 2 && rec->type == CAIRN_REC_COMPACTED) {
        cairn__hole h;
        cairn__err e;
        if (cairn__hole_decode(rec->json, rec->json_len, rec->seq, &h, &e) != CAIRN_OK)
            return cairn__db_failf(j->db, CAIRN_ECORRUPT, "%s: a hole at seq %llu does not read; "
                                   "not compacting it (run cairn verify)", j->p->s->log.name,
                                   (unsigned long long)rec->seq);
        j->p->hole_deaths += h.deaths;
        v = V_HOLE;
    } else if (rec->type == CAIRN_REC_COMPACTED) {
        j->p->frozen = 1; /* kept; and the file is never rewritten */
    } else {
        if ((rc = j->fn(j->user, rec, &v)) != CAIRN_OK)
            return rc;
        v = v == CAIRN__DROP         ? V_DROP
            : v == CAIRN__DROP_DEATH ? V_DEATH
            : v == CAIRN__DROP_UNREAD ? V_UNREAD
                                      : V_KEEP;
    }
    if (v == V_DROP || v == V_DEATH || v == V_UNREAD) {
        j->p->drops++;
        j->p->drop_bytes += len;
        if (v != V_UNREAD)
            j->p->last_drop = rec->seq;
        j->p->deaths += v == V_DEATH;
        j->out->dropped++;
        j->out->dropped_bytes += len;
    }
    /* A run of dropped records becomes one hole, ended early at an anchor
     * (write_one). */
    prev = j->p->n == 0 ? V_KEEP : j->p->verdict[j->p->n - 1];
    if (v == V_KEEP || v == V_HOLE || prev == V_KEEP || prev == V_HOLE || j->run_ended)
        j->p->after++;
    j->run_ended = v != V_KEEP && v != V_HOLE && is_anchor(j->anchors, j->n_anchors, rec->seq);
    j->p->verdict[j->p->n++] = (uint8_t)v;
    return CAIRN_OK;
}

typedef struct writer {
    cairn_db *db;
    plan_seg *p;
    const uint64_t *anchors;
    size_t n_anchors;
    cairn__sealw w;
    cairn__holeb hb;
    uint64_t i;
    const char *why;
    const int *stop;
    cairn__err e;
    cairn__chain ch;      /* the hash chain through the records (chain.h), */
    uint8_t h[CHAIN_LEN]; /* when the MANIFEST keeps the segment's: each new */
    int chain_on;         /* hole carries the value after its records */
} writer;

static int stopped(const int *stop)
{
    return stop != NULL && __atomic_load_n(stop, __ATOMIC_ACQUIRE);
}

static int flush_hole(writer *w)
{
    uint8_t *rec;
    size_t len;
    uint64_t seq = w->hb.h.seq, upto = w->hb.h.upto;
    int64_t ts = w->hb.ts;
    int rc;
    if (w->hb.h.records == 0)
        return CAIRN_OK;
    memcpy(w->hb.chain, w->h, CHAIN_LEN);
    if ((rc = cairn__holeb_emit(&w->hb, w->p->s->s.salt, w->why, &rec, &len)) != CAIRN_OK)
        return cairn__fail(&w->e, rc, "%s: no memory to compact", w->p->s->log.name);
    rc = cairn__sealw_add(&w->w, rec, len, seq, upto, ts, &w->e);
    cairn__free(w->db->a, rec);
    return rc;
}

/* Fold a record into the writer's chain: a kept one, or an earlier hole,
 * whose chain_in must be the chain here. */
static int chain_one(writer *w, const cairn_record *rec, size_t len, const uint8_t *raw)
{
    int rc, how;
    if (!w->chain_on)
        return CAIRN_OK;
    rc = cairn__chain_record(&w->ch, w->h, rec, raw, len, w->p->s->s.version >= 2, &how);
    if (rc == CAIRN_ECORRUPT || how == CHAIN_BROKEN)
        return cairn__fail(&w->e, CAIRN_ECORRUPT, "%s: the hole at seq %llu does not follow "
                           "the hash chain before it; not compacting it (run cairn verify)",
                           w->p->s->log.name, (unsigned long long)rec->seq);
    if (rc != CAIRN_OK)
        return cairn__fail(&w->e, rc, "no memory to compact");
    return CAIRN_OK;
}

/* A dropped record into the writer's chain: its leaf, kept for a purge's
 * hole; the hole's chain_in when it is the hole's first. */
static int chain_dropped(writer *w, const uint8_t *raw, size_t len)
{
    uint8_t d[CHAIN_LEN];
    int rc;
    if (!w->chain_on)
        return CAIRN_OK;
    if (w->hb.h.records == 1) /* just added: the first of its hole */
        memcpy(w->hb.chain_in, w->h, CHAIN_LEN);
    rc = cairn__chain_leaf(&w->ch, raw, len, d);
    if (rc == CAIRN_OK)
        rc = cairn__chain_fold(&w->ch, w->h, d);
    if (rc == CAIRN_OK && w->hb.leaves_on)
        rc = cairn__holeb_leaf(&w->hb, d);
    return rc == CAIRN_OK ? CAIRN_OK : cairn__fail(&w->e, rc, "no memory to compact");
}

static int write_one(void *u, const cairn_record *rec, size_t len, const uint8_t *raw)
{
    writer *w = u;
    int v, rc;
    if (w->i >= w->p->n) /* the file changed under it: it is immutable */
        return cairn__fail(&w->e, CAIRN_ECORRUPT, "%s: more records than it had",
                           w->p->s->log.name);
    v = w->p->verdict[w->i++];
    if ((w->i & 4095) == 0 && stopped(w->stop))
        return cairn__fail(&w->e, CAIRN_ELOCKED, "compaction given up");
    if (v == V_DROP || v == V_DEATH || v == V_UNREAD) {
        int anchor = is_anchor(w->anchors, w->n_anchors, rec->seq);
        rc = cairn__holeb_add(&w->hb, rec, len, v == V_DEATH);
        if (rc == CAIRN_OK && anchor) /* the checksum is the record's last 8 bytes */
            rc = cairn__holeb_anchor(&w->hb, rec->seq, get_le64(raw + len - 8));
        if (rc != CAIRN_OK)
            return cairn__fail(&w->e, rc, "no memory to compact");
        if ((rc = chain_dropped(w, raw, len)) != CAIRN_OK)
            return rc;
        /* A hole ends at a derived file's covered seq: a reader of the file
         * folds from the next one, and must meet every hole after it whole.
         * And a hole stays far below the largest record. */
        if (anchor || w->hb.n_ends + w->hb.n_anchors >= HOLE_LIST_MAX)
            return flush_hole(w);
        return CAIRN_OK;
    }
    if ((rc = flush_hole(w)) != CAIRN_OK || (rc = chain_one(w, rec, len, raw)) != CAIRN_OK)
        return rc;
    if (v == V_HOLE) {
        cairn__hole h;
        if (cairn__hole_decode(rec->json, rec->json_len, rec->seq, &h, &w->e) != CAIRN_OK)
            return CAIRN_ECORRUPT;
        return cairn__sealw_add(&w->w, raw, len, rec->seq, h.upto, rec->ts_ms, &w->e);
    }
    return cairn__sealw_add(&w->w, raw, len, rec->seq, rec->seq, rec->ts_ms, &w->e);
}

/* Write segment p anew as its next rev and open it. chain_in: the hash
 * chain before it; chain_out (NULL when the MANIFEST keeps none yet) the
 * value after it, which the records must give. A purge's holes list their
 * records' leaves, so the chain is checked through them. */
static int rewrite(cairn_db *db, plan_seg *p, const char *why, const uint64_t *anchors,
                   size_t n_anchors, const int *stop, const uint8_t *chain_in,
                   const uint8_t *chain_out, uint8_t **buf, size_t *cap)
{
    char fin[LOGSEG_NAME_MAX];
    writer w;
    int rc;

    memset(&w, 0, sizeof w);
    if (cairn__chain_init(&w.ch) != CAIRN_OK)
        return cairn__db_failf(db, CAIRN_ENOMEM, "no memory to compact");
    memcpy(w.h, chain_in, CHAIN_LEN);
    w.chain_on = 1;
    w.hb.has_chain = 1;
    w.hb.leaves_on = why != NULL && strncmp(why, "purge ", 6) == 0;
    w.db = db;
    w.p = p;
    w.anchors = anchors;
    w.n_anchors = n_anchors;
    w.why = why;
    w.stop = stop;
    w.hb.a = db->a;
    cairn__seg_file_name(fin, p->id, p->rev + 1);
    rc = cairn__sealw_begin(&w.w, db->io, db->a, db->dirfd, fin, p->id, p->s->s.salt,
                            p->s->s.base_seq, p->s->s.created_ms, 1, p->s->s.dict,
                            p->s->s.dict_len, &w.e);
    if (rc == CAIRN_OK) {
        rc = each_in_file(db, p->s, buf, cap, write_one, &w);
        if (rc != CAIRN_OK && w.e.msg[0] == '\0')
            snprintf(w.e.msg, sizeof w.e.msg, "%s", cairn_errmsg(db));
    }
    if (rc == CAIRN_OK)
        rc = flush_hole(&w);
    if (rc == CAIRN_OK && chain_out != NULL && memcmp(w.h, chain_out, CHAIN_LEN) != 0)
        rc = cairn__fail(&w.e, CAIRN_ECORRUPT, "%s: its records do not give the hash chain the "
                         "MANIFEST keeps for it; not compacting it (run cairn verify)",
                         p->s->log.name);
    cairn__chain_free(&w.ch);
    cairn__holeb_free(&w.hb);
    if (rc == CAIRN_OK)
        rc = cairn__sealw_finish(&w.w, &p->fresh_size, &w.e);
    else
        cairn__sealw_abort(&w.w);
    if (rc == CAIRN_OK)
        rc = cairn__seg_open_sealed(db, p->id, p->rev + 1, &p->fresh, &w.e);
    if (rc == CAIRN_OK && (cairn__sealed_span(&p->fresh->s) != cairn__sealed_span(&p->s->s) ||
                           p->fresh->s.base_seq != p->s->s.base_seq))
        rc = cairn__fail(&w.e, CAIRN_ECORRUPT, "%s: the compacted file does not stand for the "
                         "seqs of the old one", fin);
    if (rc != CAIRN_OK) {
        cairn__seg_release(db, p->fresh);
        p->fresh = NULL;
        db->io->unlinkat(db->io->user, "compact.cleanup", db->dirfd, fin);
        return cairn__db_fail(db, rc, &w.e);
    }
    return CAIRN_OK;
}

/* The swap is off (nothing written): the new files go (mu held; they are
 * no MANIFEST's). */
static void swap_abandoned(cairn_db *db, plan_seg *ps, size_t np)
{
    for (size_t k = 0; k < np; k++)
        if (ps[k].fresh != NULL) {
            char name[LOGSEG_NAME_MAX];
            cairn__seg_file_name(name, ps[k].id, ps[k].rev + 1);
            db->io->unlinkat(db->io->user, "compact.cleanup", db->dirfd, name);
            cairn__seg_release(db, ps[k].fresh);
            ps[k].fresh = NULL;
        }
}

/* The memories whose going the sealed prefix's holes stand for, once the
 * files written anew are in. */
static uint64_t deaths_after(const plan_seg *ps, size_t np)
{
    uint64_t n = 0;
    for (size_t k = 0; k < np; k++)
        n += ps[k].hole_deaths + (ps[k].fresh != NULL ? ps[k].deaths : 0);
    return n;
}

/* One MANIFEST naming every file written anew, and a view of it (mu held).
 * Its deaths_dropped is counted from the holes, so a MANIFEST that had
 * none (version 4) gets it right. */
static int swap_in(cairn_db *db, plan_seg *ps, size_t np)
{
    view *cur = db->view, *nv = NULL;
    seg_ref **segs;
    manifest m;
    cairn__err e;
    int rc;

    if (cairn__manifest_copy(&cur->m, db->a, &m) != CAIRN_OK)
        return cairn__db_failf(db, CAIRN_ENOMEM, "no memory for a MANIFEST");
    segs = cairn__calloc(db->a, m.n, sizeof *segs);
    if (segs == NULL) {
        cairn__manifest_free(db->a, &m);
        return cairn__db_failf(db, CAIRN_ENOMEM, "no memory for a view");
    }
    memcpy(segs, cur->segs, m.n * sizeof *segs);
    for (size_t k = 0; k < np; k++) {
        size_t i;
        if (ps[k].fresh == NULL)
            continue;
        if (ps[k].last_drop > m.dropped_upto)
            m.dropped_upto = ps[k].last_drop;
        for (i = 0; i < m.n && m.e[i].id != ps[k].id; i++)
            ;
        /* Only compaction changes a sealed entry, and only in a turn. */
        if (i == m.n || m.e[i].kind != SEG_SEALED || m.e[i].rev != ps[k].rev) {
            cairn__free(db->a, segs);
            cairn__manifest_free(db->a, &m);
            return cairn__db_failf(db, CAIRN_ECORRUPT, "segment %llu changed while compacting",
                                   (unsigned long long)ps[k].id);
        }
        m.e[i].rev = ps[k].rev + 1;
        segs[i] = ps[k].fresh;
    }
    m.deaths_dropped = deaths_after(ps, np);
    m.generation++;
    rc = cairn__db_manifest_write(db, &m, &e);
    if (rc != CAIRN_OK) {
        /* Either MANIFEST is whole and right about the records, but this
         * handle cannot know which: it must not write again (a retry would
         * write over a file the new one names). A reopen reads it; the
         * next writer open removes the files it does not name. */
        rc = cairn__kill(db, rc, &e);
        cairn__db_fail(db, rc, &e);
    } else if ((rc = cairn__view_make(db, &m, segs, &nv)) != CAIRN_OK) {
        rc = cairn__kill(db, rc, NULL);
        cairn__db_failf(db, rc, "no memory for a view of the compacted store; reopen it");
    } else {
        cairn__view_publish(db, nv);
    }
    cairn__free(db->a, segs);
    cairn__manifest_free(db->a, &m);
    return rc;
}

void cairn__compact_totals(cairn_db *db, uint64_t *records, uint64_t *bytes)
{
    /* mu: the active segment's extent grows under it (another thread's
     * appends) */
    pthread_mutex_lock(&db->mu);
    totals(db->view, records, bytes);
    pthread_mutex_unlock(&db->mu);
}

static void totals(const view *v, uint64_t *records, uint64_t *bytes)
{
    *records = *bytes = 0;
    for (size_t i = 0; i < v->m.n; i++) {
        const seg_ref *s = v->segs[i];
        *records += s->sealed ? s->s.record_count : s->log.n;
        *bytes += s->sealed ? s->map_len : s->log.end;
    }
}

int cairn__compact(cairn_db *db, const char *why, int dry_run, const uint64_t *anchors,
                   size_t n_anchors, cairn__compact_fn fn, cairn__compact_check_fn before,
                   cairn__compact_check_fn check, void *user, const int *stop,
                   cairn__compact_result *out)
{
    view *v;
    plan_seg *ps = NULL;
    size_t np = 0, n_fill = 0;
    cairn__chain_fill *fill = NULL; /* the chain of a prefix sealed before it */
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = CAIRN_OK;

    memset(out, 0, sizeof *out);
    if ((rc = cairn__db_refresh(db)) != CAIRN_OK) /* the MANIFEST as it is now */
        return rc;
    v = cairn__view_acquire(db);
    pthread_mutex_lock(&db->mu); /* as in cairn__compact_totals */
    totals(v, &out->records_before, &out->bytes_before);
    pthread_mutex_unlock(&db->mu);
    while (np < v->m.n && v->m.e[np].kind == SEG_SEALED)
        np++;
    if (np > 0 && (ps = cairn__calloc(db->a, np, sizeof *ps)) == NULL)
        rc = cairn__db_failf(db, CAIRN_ENOMEM, "no memory to compact");
    for (size_t k = 0; k < np && rc == CAIRN_OK; k++) {
        judge j = {db, &ps[k], fn, user, out, anchors, n_anchors, 0};
        ps[k].s = v->segs[k];
        ps[k].id = v->m.e[k].id;
        ps[k].rev = v->m.e[k].rev;
        ps[k].verdict = cairn__malloc(db->a, ps[k].s->s.record_count ? ps[k].s->s.record_count : 1);
        if (ps[k].verdict == NULL) {
            rc = cairn__db_failf(db, CAIRN_ENOMEM, "no memory to compact");
            break;
        }
        rc = each_in_file(db, ps[k].s, &buf, &cap, judge_one, &j);
        out->segments++;
        out->upto = v->m.e[k].last_seq;
        if (ps[k].frozen) { /* its records stay, dropped or not */
            out->dropped -= ps[k].drops;
            out->dropped_bytes -= ps[k].drop_bytes;
            ps[k].drops = 0;
        }
        if (ps[k].drops > 0)
            out->rewritten++;
    }
    for (size_t k = 0; k < np && rc == CAIRN_OK && !dry_run; k++) {
        if (stopped(stop))
            rc = cairn__db_failf(db, CAIRN_ELOCKED, "compaction given up");
        else if (ps[k].drops > 0) {
            /* The chain before it: the MANIFEST's value, or computed once
             * for the whole prefix (a store sealed before the chain):
             * every hole carries it. */
            static const uint8_t zero[CHAIN_LEN];
            const uint8_t *in = k == 0 ? zero : v->m.e[k - 1].chained ? v->m.e[k - 1].chain : NULL;
            if (in == NULL && fill == NULL) {
                uint8_t end[CHAIN_LEN];
                cairn__err e;
                fill = cairn__calloc(db->a, np, sizeof *fill);
                if (fill == NULL)
                    rc = cairn__db_failf(db, CAIRN_ENOMEM, "no memory to compact");
                else if ((rc = cairn__chain_before(db, v, np, end, fill, &n_fill, &e)) !=
                         CAIRN_OK)
                    rc = cairn__db_fail(db, rc, &e);
            }
            for (size_t i = 0; in == NULL && i < n_fill; i++)
                if (fill[i].id == v->m.e[k - 1].id)
                    in = fill[i].chain;
            if (rc == CAIRN_OK && in == NULL)
                rc = cairn__db_failf(db, CAIRN_ECORRUPT, "the hash chain before segment %llu "
                                     "cannot be computed; not compacting (run cairn verify)",
                                     (unsigned long long)ps[k].id);
            if (rc == CAIRN_OK)
                rc = rewrite(db, &ps[k], why, anchors, n_anchors, stop, in,
                             v->m.e[k].chained ? v->m.e[k].chain : NULL, &buf, &cap);
        }
    }
    if (rc != CAIRN_OK && !dry_run) {
        /* Files no MANIFEST names: away with them. */
        for (size_t k = 0; k < np; k++)
            if (ps[k].fresh != NULL) {
                char name[LOGSEG_NAME_MAX];
                cairn__seg_file_name(name, ps[k].id, ps[k].rev + 1);
                db->io->unlinkat(db->io->user, "compact.cleanup", db->dirfd, name);
            }
    } else if (rc == CAIRN_OK && !dry_run &&
               (out->rewritten > 0 || deaths_after(ps, np) != v->m.deaths_dropped)) {
        /* A turn for the swap alone: writers waited for nothing else. In
         * it, the engine checks that nothing it relied on changed. From
         * here a failure leaves the new files: the MANIFEST may name them
         * (a rename that happened, a directory sync that failed). A
         * MANIFEST whose deaths_dropped is wrong (version 4) is written
         * anew even with no file rewritten. */
        if (before != NULL && (rc = before(user)) != CAIRN_OK) {
            pthread_mutex_lock(&db->mu);
            swap_abandoned(db, ps, np);
            pthread_mutex_unlock(&db->mu);
            goto done;
        }
        pthread_mutex_lock(&db->mu);
        rc = cairn__check_writable(db);
        if (rc == CAIRN_OK)
            rc = cairn__turn_get(db); /* the lock, and the MANIFEST as it is */
        if (rc == CAIRN_OK) {
            pthread_mutex_unlock(&db->mu);
            /* a swap that rewrites nothing (deaths_dropped alone) drops
             * nothing a derived file relies on */
            rc = check != NULL && out->rewritten > 0 ? check(user) : CAIRN_OK;
            pthread_mutex_lock(&db->mu);
            if (rc == CAIRN_OK)
                rc = swap_in(db, ps, np);
            else
                swap_abandoned(db, ps, np);
            cairn__turn_put(db);
        } else {
            swap_abandoned(db, ps, np);
        }
        pthread_mutex_unlock(&db->mu);
        for (size_t k = 0; k < np && rc == CAIRN_OK; k++) {
            char name[LOGSEG_NAME_MAX];
            cairn__err e;
            if (ps[k].fresh == NULL)
                continue;
            /* Readers holding the old view keep their mapping. */
            cairn__seg_file_name(name, ps[k].id, ps[k].rev);
            if (cairn__io_unlink(db->io, "compact.unlink", db->dirfd, name, &e) != CAIRN_OK)
                break; /* left for the next writer open to remove */
        }
    }
    if (rc == CAIRN_OK && (dry_run || out->rewritten == 0)) {
        /* What it would leave: the files estimated from their share of
         * raw bytes kept. */
        out->records_after = out->records_before;
        out->bytes_after = out->bytes_before;
        for (size_t k = 0; k < np; k++) {
            const sealed_seg *ss = &ps[k].s->s;
            if (ps[k].drops == 0)
                continue;
            out->records_after -= ps[k].n - ps[k].after;
            if (ss->raw_bytes > 0)
                out->bytes_after -= (uint64_t)((double)ps[k].s->map_len *
                                               (double)ps[k].drop_bytes / (double)ss->raw_bytes);
        }
    } else if (rc == CAIRN_OK) {
        cairn__compact_totals(db, &out->records_after, &out->bytes_after);
    }
done:
    for (size_t k = 0; k < np; k++) {
        cairn__free(db->a, ps[k].verdict);
        cairn__seg_release(db, ps[k].fresh);
    }
    cairn__free(db->a, ps);
    cairn__free(db->a, buf);
    cairn__free(db->a, fill);
    cairn__view_release(db, v);
    return rc;
}
