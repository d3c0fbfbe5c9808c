/*
 * head.c - the hash chain over a store's segments (chain.h,
 * format-spec/chain.md): the value before a segment (for the sealer and
 * compaction), the head now (cairn_head_get), and the check of the whole
 * chain against the MANIFEST and against a head kept elsewhere
 * (cairn_verify_head).
 */
#include "head.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "hole.h"
#include "record.h"

/* Where a walk over one segment stopped early: the seq of the block or
 * record it could not read (0: it read everything). */
typedef struct seg_walk {
    uint64_t last;     /* the last seq folded (a hole: the last it stands for) */
    uint64_t bad_seq;  /* a record or block that does not read */
    int (*at)(void *u, uint64_t seq, uint64_t upto, const uint8_t h[CHAIN_LEN]);
    void *u;           /* at: called after each record (may stop the walk) */
    void (*hole)(void *u, uint64_t seq, uint64_t upto, int how); /* after each hole
                          with chain members (how: CHAIN_BRIDGED, _THROUGH, _BROKEN) */
} seg_walk;

static int walk_sealed(cairn_db *db, cairn__chain *c, const seg_ref *s, uint8_t h[CHAIN_LEN],
                       seg_walk *w, cairn__err *e)
{
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = CAIRN_OK;

    for (uint32_t b = 0; b < s->s.block_count && rc == CAIRN_OK; b++) {
        size_t raw_len, pos = 0;
        sealed_block blk;
        cairn__sealed_block(&s->s, b, &blk);
        rc = cairn__seg_read_block(db, s, b, NULL, &buf, &cap, &raw_len, e);
        if (rc != CAIRN_OK) {
            w->bad_seq = blk.first_seq;
            break;
        }
        while (pos < raw_len && rc == CAIRN_OK) {
            cairn_record rec;
            size_t len;
            uint64_t upto;
            int how;
            rec_result r = cairn__record_decode(buf + pos, raw_len - pos, s->s.salt, &rec, &len);
            if (r != REC_OK) {
                w->bad_seq = blk.first_seq;
                rc = cairn__fail(e, r == REC_BAD_SUM ? CAIRN_ECHECKSUM : CAIRN_ECORRUPT,
                                 "%s: block %u: %s", s->log.name, b, cairn__record_result_str(r));
                break;
            }
            upto = rec.seq;
            if (s->s.version >= 2 && rec.type == CAIRN_REC_COMPACTED) {
                cairn__hole hole;
                cairn__err he;
                if (cairn__hole_decode(rec.json, rec.json_len, rec.seq, &hole, &he) == CAIRN_OK)
                    upto = hole.upto;
            }
            rc = cairn__chain_record(c, h, &rec, buf + pos, len, s->s.version >= 2, &how);
            if (rc == CAIRN_OK && how != CHAIN_STEPPED && w->hole != NULL)
                w->hole(w->u, rec.seq, upto, how);
            if (rc == CAIRN_ECORRUPT) {
                w->bad_seq = rec.seq;
                rc = cairn__fail(e, rc, "%s: the hole at seq %llu has an invalid chain value",
                                 s->log.name, (unsigned long long)rec.seq);
                break;
            }
            if (rc != CAIRN_OK) {
                rc = cairn__fail(e, rc, "no memory to hash the log");
                break;
            }
            w->last = upto;
            if (w->at != NULL)
                rc = w->at(w->u, rec.seq, upto, h);
            pos += len;
        }
    }
    cairn__free(db->a, buf);
    return rc;
}

/* Fold segment i of v into h. A log-form segment is read up to the end
 * its index had when the walk began. */
static int walk_seg(cairn_db *db, cairn__chain *c, const view *v, size_t i, uint8_t h[CHAIN_LEN],
                    seg_walk *w, cairn__err *e)
{
    const seg_ref *s = v->segs[i];
    uint64_t end;
    int rc;

    if (s->sealed)
        return walk_sealed(db, c, s, h, w, e);
    pthread_mutex_lock(&db->mu);
    end = s->log.end;
    pthread_mutex_unlock(&db->mu);
    if (w->at == NULL)
        return cairn__chain_logseg(c, db->io, "chain.read", db->a, s->log.fd, s->log.name,
                                   s->log.salt, end, h, &w->last, e);
    /* A walk that looks at each record: one record at a time. */
    {
        uint64_t off = 64;
        size_t cap = 0;
        uint8_t *buf = NULL;
        rc = CAIRN_OK;
        while (rc == CAIRN_OK && off < end) {
            uint8_t hd[4];
            size_t got, len;
            cairn_record rec;
            rc = cairn__io_read(db->io, "chain.read", s->log.fd, hd, 4, off, &got, s->log.name, e);
            if (rc != CAIRN_OK || got < 4)
                break;
            len = (size_t)hd[0] | (size_t)hd[1] << 8 | (size_t)hd[2] << 16 | (size_t)hd[3] << 24;
            if (len < REC_OVERHEAD || len > end - off ||
                cairn__grow(db->a, (void **)&buf, &cap, len, 1) != CAIRN_OK)
                break;
            rc = cairn__io_read(db->io, "chain.read", s->log.fd, buf, len, off, &got, s->log.name,
                                e);
            if (rc != CAIRN_OK || got != len ||
                cairn__record_decode(buf, len, s->log.salt, &rec, &len) != REC_OK)
                break;
            rc = cairn__chain_step(c, h, buf, len);
            if (rc != CAIRN_OK) {
                rc = cairn__fail(e, rc, "no memory to hash the log");
                break;
            }
            w->last = rec.seq;
            rc = w->at(w->u, rec.seq, rec.seq, h);
            off += len;
        }
        cairn__free(db->a, buf);
        return rc;
    }
}

int cairn__chain_before(cairn_db *db, const view *v, size_t idx, uint8_t h[CHAIN_LEN],
                        cairn__chain_fill *fill, size_t *n_fill, cairn__err *e)
{
    cairn__chain c;
    size_t from = idx;
    int rc;

    *n_fill = 0;
    memset(h, 0, CHAIN_LEN);
    while (from > 0 && !v->m.e[from - 1].chained)
        from--;
    if (from > 0)
        memcpy(h, v->m.e[from - 1].chain, CHAIN_LEN);
    if (from == idx)
        return CAIRN_OK;
    if (cairn__chain_init(&c) != CAIRN_OK)
        return cairn__fail(e, CAIRN_ENOMEM, "no memory to hash the log");
    rc = CAIRN_OK;
    for (size_t i = from; i < idx && rc == CAIRN_OK; i++) {
        seg_walk w = {0, 0, NULL, NULL, NULL};
        rc = walk_seg(db, &c, v, i, h, &w, e);
        if (rc == CAIRN_OK && v->m.e[i].kind == SEG_SEALED && fill != NULL) {
            fill[*n_fill].id = v->m.e[i].id;
            fill[*n_fill].rev = v->m.e[i].rev;
            memcpy(fill[*n_fill].chain, h, CHAIN_LEN);
            (*n_fill)++;
        }
    }
    cairn__chain_free(&c);
    return rc;
}

void cairn__chain_apply_fill(manifest *m, const cairn__chain_fill *fill, size_t n_fill)
{
    for (size_t k = 0; k < n_fill; k++)
        for (size_t i = 0; i < m->n; i++)
            if (m->e[i].id == fill[k].id && m->e[i].kind == SEG_SEALED &&
                m->e[i].rev == fill[k].rev && !m->e[i].chained) {
                m->e[i].chained = 1;
                memcpy(m->e[i].chain, fill[k].chain, CHAIN_LEN);
            }
}

/* ---- the value at one seq ---------------------------------------------- */

typedef struct at_seq {
    uint64_t seq;
    int found;          /* 1: the value at seq; -1: seq lies inside a hole */
    uint64_t hole_from, hole_upto;
    uint8_t h[CHAIN_LEN];
} at_seq;

#define STOP_WALK 1 /* not a status: at_seq's way to end a walk */

static int at_seq_fn(void *u, uint64_t seq, uint64_t upto, const uint8_t h[CHAIN_LEN])
{
    at_seq *a = u;
    if (upto < a->seq)
        return CAIRN_OK;
    if (seq <= a->seq && upto == a->seq) {
        a->found = 1;
        memcpy(a->h, h, CHAIN_LEN);
    } else if (seq <= a->seq) {
        a->found = -1;
        a->hole_from = seq;
        a->hole_upto = upto;
    }
    return STOP_WALK;
}

int cairn__chain_at(cairn_db *db, const view *v, uint64_t seq, uint8_t h[CHAIN_LEN],
                    cairn__err *e)
{
    at_seq a;
    cairn__chain c;
    size_t idx;
    int rc;

    for (idx = 0; idx < v->m.n; idx++) {
        const manifest_entry *x = &v->m.e[idx];
        if (x->kind == SEG_ACTIVE || x->last_seq >= seq)
            break;
    }
    if (idx == v->m.n || seq < v->m.e[idx].base_seq)
        return cairn__fail(e, CAIRN_ENOTFOUND, "seq %llu is not in the log (a number recovery "
                           "retired)", (unsigned long long)seq);
    rc = cairn__chain_before(db, v, idx, h, NULL, &(size_t){0}, e);
    if (rc != CAIRN_OK)
        return rc;
    if (cairn__chain_init(&c) != CAIRN_OK)
        return cairn__fail(e, CAIRN_ENOMEM, "no memory to hash the log");
    memset(&a, 0, sizeof a);
    a.seq = seq;
    {
        seg_walk w = {0, 0, at_seq_fn, &a, NULL};
        rc = walk_seg(db, &c, v, idx, h, &w, e);
    }
    cairn__chain_free(&c);
    if (rc == STOP_WALK)
        rc = CAIRN_OK;
    if (rc != CAIRN_OK)
        return rc;
    if (a.found == -1) {
        char pol[96];
        cairn_retain_format(&v->m.retain, pol, sizeof pol);
        return cairn__fail(e, CAIRN_ENOTFOUND, "seq %llu lies in a hole: seqs %llu..%llu were "
                           "dropped by a compaction or a purge (the store's retention policy "
                           "is %s); the log holds seq %llu and seq %llu", (unsigned long long)seq,
                           (unsigned long long)a.hole_from, (unsigned long long)a.hole_upto, pol,
                           (unsigned long long)(a.hole_from - 1),
                           (unsigned long long)a.hole_upto);
    }
    if (a.found == 0)
        return cairn__fail(e, CAIRN_ENOTFOUND, "seq %llu is past the end of the log",
                           (unsigned long long)seq);
    memcpy(h, a.h, CHAIN_LEN);
    return CAIRN_OK;
}

/* Pin the current view, with every record this handle or another process
 * wrote before the call. */
static int pin_view(cairn_db *db, view **out)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db->dead ? CAIRN_OK : cairn__refresh(db);
    *out = db->view;
    atomic_fetch_add(&(*out)->refs, 1);
    pthread_mutex_unlock(&db->mu);
    if (rc != CAIRN_OK)
        cairn__view_release(db, *out);
    return rc;
}

int cairn_head_get(cairn_db *db, cairn_head *out)
{
    cairn__chain c;
    cairn__err e;
    view *v;
    size_t from;
    int rc;

    if (db == NULL || out == NULL)
        return CAIRN_EINVAL;
    memset(out, 0, sizeof *out);
    if ((rc = pin_view(db, &v)) != CAIRN_OK)
        return rc;
    /* From the newest segment the MANIFEST keeps the chain of. */
    for (from = v->m.n; from > 0 && !v->m.e[from - 1].chained; from--)
        ;
    if (from > 0) {
        memcpy(out->hash, v->m.e[from - 1].chain, CHAIN_LEN);
        /* the newest seq a record stands for: an empty segment (recovery
         * closes one) holds none, and the numbers before it may be retired */
        for (size_t k = from; k > 0 && out->seq == 0; k--)
            if (v->m.e[k - 1].count > 0)
                out->seq = v->m.e[k - 1].last_seq;
    }
    if (cairn__chain_init(&c) != CAIRN_OK) {
        cairn__view_release(db, v);
        return cairn__db_failf(db, CAIRN_ENOMEM, "no memory to hash the log");
    }
    rc = CAIRN_OK;
    for (size_t i = from; i < v->m.n && rc == CAIRN_OK; i++) {
        seg_walk w = {out->seq, 0, NULL, NULL, NULL};
        rc = walk_seg(db, &c, v, i, out->hash, &w, &e);
        out->seq = w.last;
        if (rc == CAIRN_OK && w.bad_seq == 0 && !v->segs[i]->sealed && i + 1 < v->m.n &&
            v->segs[i]->log.n != v->m.e[i].count)
            rc = cairn__fail(&e, CAIRN_ECORRUPT, "%s: fewer valid records than the MANIFEST "
                             "says; run cairn verify", v->segs[i]->log.name);
    }
    cairn__chain_free(&c);
    cairn__view_release(db, v);
    if (rc != CAIRN_OK)
        return cairn__db_fail(db, rc, &e);
    return CAIRN_OK;
}

/* ---- the check --------------------------------------------------------- */

typedef struct vchain {
    cairn_verify_fn fn;
    void *user;
    cairn_verify_report *out;
    const cairn_head *want;
    int want_seen;           /* the walk passed want->seq */
    int want_matched;        /* and the chain there was want->hash */
    int broken_before_want;  /* a hole at or before want->seq broke the chain */
    uint64_t verified;       /* the last seq a MANIFEST value or a hole vouched for */
    const char *file;
    uint8_t *truth;          /* the chain from the records alone */
} vchain;

static void vproblem(vchain *c, const char *file, uint64_t bad, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void vproblem(vchain *c, const char *file, uint64_t bad, int code, const char *fmt, ...)
{
    char m[CAIRN_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    c->out->problems++;
    if (bad != 0 && (c->out->first_bad == 0 || bad < c->out->first_bad))
        c->out->first_bad = bad;
    if (c->fn != NULL)
        c->fn(c->user, file, 0, code, m);
}

/* After each hole with chain members. */
static void at_hole(void *u, uint64_t seq, uint64_t upto, int how)
{
    vchain *c = u;
    int before_want = c->want == NULL || seq <= c->want->seq;
    if (how == CHAIN_BROKEN) {
        uint64_t from = c->verified + 1 < seq ? c->verified + 1 : seq;
        vproblem(c, c->file, from, CAIRN_ECORRUPT, "the hole at seq %llu (seqs %llu..%llu "
                 "compacted) does not follow the hash chain before it: a record of seqs "
                 "%llu..%llu was changed, dropped or added, or the hole was",
                 (unsigned long long)seq, (unsigned long long)seq, (unsigned long long)upto,
                 (unsigned long long)from, (unsigned long long)(seq - 1));
        if (c->want != NULL && seq <= c->want->seq)
            c->broken_before_want = 1;
        return;
    }
    c->verified = upto;
    if (how == CHAIN_BRIDGED && before_want) {
        c->out->holes++;
        c->out->hole_seqs += upto - seq + 1;
    }
}

/* After each record: is it the one the head given names? */
static int at_want(void *u, uint64_t seq, uint64_t upto, const uint8_t h[CHAIN_LEN])
{
    vchain *c = u;
    uint64_t ws = c->want->seq;
    char have[2 * CHAIN_LEN + 1], want[2 * CHAIN_LEN + 1];
    (void)h;
    if (c->want_seen || upto < ws)
        return CAIRN_OK;
    c->want_seen = 1;
    if (seq > ws) {
        vproblem(c, c->file, 0, CAIRN_ECORRUPT, "the head's seq %llu is not in the log (the log "
                 "goes on at seq %llu): a number recovery retired, or a head of another store",
                 (unsigned long long)ws, (unsigned long long)seq);
        return CAIRN_OK;
    }
    if (seq != upto && upto != ws) {
        vproblem(c, c->file, 0, CAIRN_ECORRUPT, "the head's seq %llu lies in a hole (seqs "
                 "%llu..%llu compacted): the chain is known at seq %llu and %llu only",
                 (unsigned long long)ws, (unsigned long long)seq, (unsigned long long)upto,
                 (unsigned long long)(seq - 1), (unsigned long long)upto);
        return CAIRN_OK;
    }
    if (memcmp(c->truth, c->want->hash, CHAIN_LEN) != 0) {
        /* Where: after the last value that vouched for the records, unless
         * that value was rewritten with them; so no first seq is claimed. */
        cairn__chain_hex(c->truth, have);
        cairn__chain_hex(c->want->hash, want);
        vproblem(c, c->file, 0, CAIRN_ECORRUPT, "seq %llu: the chain is %.16s..., the head says "
                 "%.16s...: not the history that head names (the MANIFEST and holes vouch for "
                 "seqs up to %llu: the change is after, or they were rewritten too)",
                 (unsigned long long)ws, have, want, (unsigned long long)c->verified);
        return CAIRN_OK;
    }
    c->want_matched = 1;
    return CAIRN_OK;
}

void cairn__verify_chain(cairn_db *db, const view *v, const cairn_head *want,
                         cairn_verify_fn fn, void *user, cairn_verify_report *out)
{
    static const uint8_t zero[CHAIN_LEN];
    vchain c;
    uint8_t truth[CHAIN_LEN], local[CHAIN_LEN];
    uint64_t last = 0;
    cairn__chain ch;
    int broken = 0;

    memset(&c, 0, sizeof c);
    c.fn = fn;
    c.user = user;
    c.out = out;
    c.want = want;
    memset(truth, 0, sizeof truth);
    memset(local, 0, sizeof local);
    c.truth = truth;
    if (want != NULL && want->seq == 0) {
        /* The empty history: the zero value, which every log begins with. */
        c.want_seen = 1;
        c.want_matched = memcmp(want->hash, zero, CHAIN_LEN) == 0;
        if (!c.want_matched)
            vproblem(&c, MANIFEST_NAME, 0, CAIRN_ECORRUPT, "a head at seq 0 has the zero "
                     "hash: this one is not a head of any store");
    }
    if (cairn__chain_init(&ch) != CAIRN_OK) {
        vproblem(&c, MANIFEST_NAME, 0, CAIRN_ENOMEM, "no memory to hash the log");
        return;
    }
    for (size_t i = 0; i < v->m.n && !broken; i++) {
        const manifest_entry *x = &v->m.e[i];
        const seg_ref *s = v->segs[i];
        seg_walk w = {last, 0, want != NULL ? at_want : NULL, &c, at_hole};
        uint8_t before[CHAIN_LEN];
        cairn__err e;
        int rc;
        c.file = s->log.name;
        memcpy(before, truth, CHAIN_LEN);
        rc = walk_seg(db, &ch, v, i, truth, &w, &e);
        if (rc != CAIRN_OK || w.bad_seq != 0) {
            /* The damage itself is reported by the structural check; the
             * chain cannot be followed past it. */
            broken = 1;
            if (want != NULL && !c.want_seen)
                vproblem(&c, s->log.name, w.bad_seq ? w.bad_seq : last + 1,
                         rc ? rc : CAIRN_ECORRUPT,
                         "the hash chain cannot be followed past seq %llu (%s): the head's seq "
                         "%llu is not proven", (unsigned long long)w.last,
                         rc ? e.msg : "a damaged record", (unsigned long long)want->seq);
            break;
        }
        /* The same records from the value the MANIFEST kept before them:
         * a difference is then this segment's own. */
        if (x->chained) {
            uint64_t first = x->base_seq;
            if (memcmp(before, local, CHAIN_LEN) == 0) {
                if (memcmp(truth, x->chain, CHAIN_LEN) != 0) {
                    char have[2 * CHAIN_LEN + 1], kept[2 * CHAIN_LEN + 1];
                    cairn__chain_hex(truth, have);
                    cairn__chain_hex(x->chain, kept);
                    vproblem(&c, s->log.name, first, CAIRN_ECORRUPT,
                             "the chain after seq %llu is %.16s..., the MANIFEST kept %.16s...: "
                             "a record of seqs %llu..%llu was changed, dropped or added, or the "
                             "MANIFEST's value was", (unsigned long long)x->last_seq, have, kept,
                             (unsigned long long)first, (unsigned long long)x->last_seq);
                } else {
                    c.verified = x->last_seq;
                }
            } else {
                /* An earlier difference: recompute this segment alone from
                 * the MANIFEST's value before it. */
                uint8_t own[CHAIN_LEN];
                seg_walk w2 = {last, 0, NULL, NULL, NULL};
                memcpy(own, local, CHAIN_LEN);
                if (walk_seg(db, &ch, v, i, own, &w2, &e) == CAIRN_OK &&
                    memcmp(own, x->chain, CHAIN_LEN) != 0)
                    vproblem(&c, s->log.name, first, CAIRN_ECORRUPT,
                             "the hash chain of seqs %llu..%llu differs from the value the "
                             "MANIFEST kept: a record of them was changed, dropped or added",
                             (unsigned long long)first, (unsigned long long)x->last_seq);
            }
            memcpy(local, x->chain, CHAIN_LEN);
        } else {
            memcpy(local, truth, CHAIN_LEN);
        }
        last = w.last;
    }
    if (!broken && want != NULL && !c.want_seen) {
        vproblem(&c, MANIFEST_NAME, last + 1, CAIRN_ECORRUPT,
                 "the log ends at seq %llu, the head given is at seq %llu: records %llu..%llu "
                 "are missing (cut off)", (unsigned long long)last,
                 (unsigned long long)want->seq, (unsigned long long)(last + 1),
                 (unsigned long long)want->seq);
    }
    out->head_proven = want != NULL && c.want_matched && !c.broken_before_want;
    cairn__chain_free(&ch);
}
