/*
 * ramindex_postings.c - the postings' block codec of the text index image
 * (format-spec/memindex.md, "Postings"): a block decoded for a cursor
 * (cairn__pk_term_block), and the encoder that sizes every term's postings
 * before the head is written (pk_plan) and then writes them as they come
 * (pk_enc).
 *
 * A mapped index keeps each term's postings in blocks of PK_BLOCK document
 * gaps, bit-packed at the widths each block needs, behind a skip table
 * (each block's last document and offset), the table only for a term of
 * more than one block. A term of one posting has no block header: its
 * widths are the image's (bits of a document number, of its tf - 1). A term
 * in RAM's postings are read in place, cut into blocks the same way.
 */
#include "ramindex_int.h"

#include <stddef.h>
#include <string.h>

#include "alloc.h"

/* ---- decoding ----------------------------------------------------------- */

/* k fields of gw + tw bits (<= 56) from bit 0 of in into out: a document
 * gap (the documents between it and the one before) in the low gw bits,
 * tf - 1 above; prev: the document before the first (UINT32_MAX: none,
 * so that the first gap is the document itself). One unaligned load a
 * field: whoever calls it has 8 readable bytes past the fields. */
static void unpack(const uint8_t *in, uint32_t k, unsigned gw, unsigned tw, uint32_t prev,
                   posting *out)
{
    uint64_t gmask = ((uint64_t)1 << gw) - 1, tmask = ((uint64_t)1 << tw) - 1;
    unsigned w = gw + tw;
    size_t bit = 0;
    if (tw == 0) { /* every tf 1: most blocks of most terms */
        for (uint32_t j = 0; j < k; j++, bit += w) {
            uint64_t v;
            memcpy(&v, in + (bit >> 3), 8);
            prev += 1 + (uint32_t)((v >> (bit & 7)) & gmask);
            out[j].doc = prev;
            out[j].tf = 1;
        }
        return;
    }
    for (uint32_t j = 0; j < k; j++, bit += w) {
        uint64_t v;
        memcpy(&v, in + (bit >> 3), 8);
        v >>= bit & 7;
        prev += 1 + (uint32_t)(v & gmask); /* wraps past 2^32: seen as not increasing */
        out[j].doc = prev;
        out[j].tf = (uint32_t)((v >> gw) & tmask) + 1;
    }
}

/* Block b of t: its postings, in place (RAM) or decoded into buf (room
 * for PK_BLOCK), and how many (0: the block's header or offset points
 * outside the term's room, or a width is past 32 or their sum past 56).
 * Only bounds are checked here: cairn__ramidx_check_postings checks what
 * it holds. */
uint32_t cairn__pk_term_block(const term *t, uint32_t b, posting *buf, const posting **out)
{
    uint32_t nb = nblocks(t), k = b + 1 < nb ? PK_BLOCK : t->n - b * PK_BLOCK;
    uint64_t at = 0;
    unsigned gw = t->db, tw = t->tb;
    const uint8_t *h;

    *out = buf;
    if (t->pk == NULL) {
        *out = t->p + (size_t)b * PK_BLOCK;
        return k;
    }
    if (t->n > 1) {
        uint32_t off;
        if (nb > 1) {
            memcpy(&off, t->pk + (size_t)b * PK_SKIP + 4, 4);
            at = off;
        }
        if (at > t->room || t->room - at < PK_HEAD)
            return 0;
        h = t->pk + at;
        gw = h[0];
        tw = h[1];
        at += PK_HEAD;
        if (gw > 32 || tw > 32 || gw + tw > TIX_MAX_W)
            return 0;
    }
    if (packed_len(k, gw + tw) > t->room - at)
        return 0;
    unpack(t->pk + at, k, gw, tw, b > 0 ? block_last(t, b - 1) : UINT32_MAX, buf);
    return k;
}

/* ---- the encoder -------------------------------------------------------- */

/* Bytes of a block of k postings whose gaps OR to gor and tf - 1 to tor. */
static uint64_t block_len(uint32_t k, uint32_t gor, uint32_t tor)
{
    return PK_HEAD + packed_len(k, bits_of(gor) + bits_of(tor));
}

static void plan_close(pk_plan *pl)
{
    if (cairn__grow(pl->a, (void **)&pl->skip, &pl->cap, pl->nskip + 2, sizeof *pl->skip) !=
        CAIRN_OK) {
        pl->failed = 1;
        return;
    }
    pl->skip[pl->nskip++] = pl->prev;
    pl->skip[pl->nskip++] = (uint32_t)pl->at; /* the table's length added at the end */
    pl->at += block_len(pl->k, pl->gor, pl->tor);
    pl->k = pl->gor = pl->tor = 0;
}

void cairn__pk_plan_feed(pk_plan *pl, const posting *p, size_t k)
{
    /* in locals: stored through pl at every posting, they cost as much
     * as the rest of the loop */
    uint32_t gor = pl->gor, tor = pl->tor, prev = pl->prev, n = pl->n, kb = pl->k;
    for (size_t j = 0; j < k; j++) {
        gor |= p[j].doc - prev - 1; /* the first: the document itself */
        tor |= p[j].tf - 1;
        prev = p[j].doc;
        n++;
        if (++kb == PK_BLOCK) {
            pl->gor = gor;
            pl->tor = tor;
            pl->prev = prev;
            pl->k = kb;
            plan_close(pl);
            gor = tor = kb = 0;
        }
    }
    pl->gor = gor;
    pl->tor = tor;
    pl->prev = prev;
    pl->n = n;
    pl->k = kb;
}

/* Term t's postings were fed (the largest tf max_tf, db the bits of a
 * document number): its length (0 for a single term: its posting is in
 * its record). CAIRN_EINVAL: a posting of more than TIX_MAX_W bits, or a
 * term too long for its skip table's offsets. */
int cairn__pk_plan_end(pk_plan *pl, size_t t, unsigned db, uint32_t max_tf, int single)
{
    uint64_t nb;
    if (db + tf_bits(max_tf) > TIX_MAX_W)
        return CAIRN_EINVAL;
    if (pl->k)
        plan_close(pl);
    if (pl->failed)
        return CAIRN_ENOMEM;
    nb = (pl->nskip - pl->first) / 2;
    if (single)
        pl->len[t] = 0;
    else if (pl->n == 1) /* no header: the document in db bits */
        pl->len[t] = packed_len(1, db + tf_bits(max_tf));
    else if (nb == 1)
        pl->len[t] = pl->at;
    else if (pl->at + nb * PK_SKIP > UINT32_MAX)
        return CAIRN_EINVAL;
    else
        pl->len[t] = pl->at + nb * PK_SKIP;
    if (nb > 1)
        for (size_t i = pl->first + 1; i < pl->nskip; i += 2)
            pl->skip[i] += (uint32_t)(nb * PK_SKIP);
    else
        pl->nskip = pl->first; /* one block: no table */
    pl->total += pl->len[t];
    pl->first = pl->nskip;
    pl->n = 0;
    pl->prev = UINT32_MAX;
    pl->at = 0;
    return CAIRN_OK;
}

int cairn__pk_plan_init(pk_plan *pl, const cairn_allocator *a, size_t nterms)
{
    memset(pl, 0, sizeof *pl);
    pl->a = a;
    pl->prev = UINT32_MAX;
    pl->len = cairn__calloc(a, nterms ? nterms : 1, sizeof *pl->len);
    return pl->len ? CAIRN_OK : CAIRN_ENOMEM;
}

void cairn__pk_plan_free(pk_plan *pl)
{
    cairn__free(pl->a, pl->len);
    cairn__free(pl->a, pl->skip);
}

static int pk_flush(pk_enc *e)
{
    int rc = e->len ? e->put(e->user, e->buf, e->len) : CAIRN_OK;
    e->len = 0;
    return rc;
}

static int pk_byte(pk_enc *e, uint8_t b)
{
    e->buf[e->len++] = b;
    e->out++;
    return e->len > sizeof e->buf - 8 ? pk_flush(e) : CAIRN_OK;
}

static int pk_u32(pk_enc *e, uint32_t v)
{
    int rc = CAIRN_OK;
    for (int i = 0; i < 4 && rc == CAIRN_OK; i++)
        rc = pk_byte(e, (uint8_t)(v >> 8 * i));
    return rc;
}

/* The open block out: its header (but in a term of one posting), its
 * fields, its last bits in a byte of their own. Each field's bits go in
 * above those not written yet (fewer than 8 between fields, w <= 56: at
 * most 63), then the whole bytes among them leave in one 8-byte store
 * (little-endian: the oldest bits first); the buffer keeps 8 bytes of
 * room past len. The loop keeps that state in locals: stored through e
 * at every field, it cost half the image's time. */
int cairn__pk_block(pk_enc *e)
{
    uint32_t gor = 0, tor = 0, prev = e->prev;
    unsigned gw, tw, w, nacc = 0;
    uint64_t acc = 0, out;
    size_t len;
    int rc = CAIRN_OK;
    for (uint32_t j = 0; j < e->k; prev = e->blk[j++].doc) {
        gor |= e->blk[j].doc - prev - 1;
        tor |= e->blk[j].tf - 1;
    }
    gw = e->n == 1 ? e->db : bits_of(gor);
    tw = e->n == 1 ? e->tb : bits_of(tor);
    if (e->n != 1 && ((rc = pk_byte(e, (uint8_t)gw)) != CAIRN_OK ||
                      (rc = pk_byte(e, (uint8_t)tw)) != CAIRN_OK))
        return rc;
    w = gw + tw;
    len = e->len;
    out = e->out;
    prev = e->prev;
    for (uint32_t j = 0; j < e->k; prev = e->blk[j++].doc) {
        uint64_t v = (uint64_t)(e->blk[j].doc - prev - 1) | (uint64_t)(e->blk[j].tf - 1) << gw;
        unsigned whole;
        acc |= v << nacc;
        nacc += w;
        memcpy(e->buf + len, &acc, 8);
        whole = nacc >> 3;
        len += whole;
        out += whole;
        acc >>= 8 * whole; /* whole <= 7: nacc + w <= 63 */
        nacc &= 7;
        if (len > sizeof e->buf - 8) {
            e->len = len;
            if ((rc = pk_flush(e)) != CAIRN_OK)
                break;
            len = e->len;
        }
    }
    e->len = len;
    e->out = out;
    if (rc == CAIRN_OK && nacc)
        rc = pk_byte(e, (uint8_t)acc);
    e->prev = prev;
    e->k = 0;
    return rc;
}

int cairn__pk_push(pk_enc *e, const posting *p, size_t k)
{
    while (k > 0) {
        size_t take = PK_BLOCK - e->k < k ? PK_BLOCK - e->k : k;
        memcpy(e->blk + e->k, p, take * sizeof *p);
        e->k += (uint32_t)take;
        p += take;
        k -= take;
        if (e->k == PK_BLOCK) {
            int rc = cairn__pk_block(e);
            if (rc != CAIRN_OK)
                return rc;
        }
    }
    return CAIRN_OK;
}

/* A term of n postings (the largest tf max_tf) starts: its skip table,
 * the next nb pairs of *skip (nb > 1), goes out first. */
int cairn__pk_term(pk_enc *e, uint32_t n, uint32_t max_tf, const uint32_t **skip)
{
    uint32_t nb = (uint32_t)(((uint64_t)n + PK_BLOCK - 1) / PK_BLOCK);
    int rc = CAIRN_OK;
    e->n = n;
    e->tb = tf_bits(max_tf);
    e->prev = UINT32_MAX;
    e->k = 0;
    for (uint32_t i = 0; nb > 1 && i < 2 * nb && rc == CAIRN_OK; i++)
        rc = pk_u32(e, (*skip)[i]);
    if (nb > 1)
        *skip += 2 * nb;
    return rc;
}

/* The postings end: the spare bytes, then padding to 8. */
int cairn__pk_end(pk_enc *e)
{
    int rc = CAIRN_OK;
    uint64_t end = pad8((size_t)e->out + TIX_SLACK);
    while (e->out < end && rc == CAIRN_OK)
        rc = pk_byte(e, 0);
    return rc == CAIRN_OK ? pk_flush(e) : rc;
}
