/*
 * chain.c - see chain.h and format-spec/chain.md.
 */
#include "chain.h"

#include <openssl/evp.h>
#include <string.h>

#include "alloc.h"
#include "hole.h"
#include "io.h"
#include "record.h"

int cairn__chain_init(cairn__chain *c)
{
    c->md = EVP_MD_fetch(NULL, "SHA256", NULL);
    c->ctx = EVP_MD_CTX_new();
    if (c->md == NULL || c->ctx == NULL) {
        cairn__chain_free(c);
        return CAIRN_ENOMEM;
    }
    return CAIRN_OK;
}

void cairn__chain_free(cairn__chain *c)
{
    EVP_MD_CTX_free(c->ctx);
    EVP_MD_free(c->md);
    c->ctx = NULL;
    c->md = NULL;
}

static int sha256(cairn__chain *c, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
                  uint8_t out[CHAIN_LEN])
{
    unsigned int n = 0;
    if (EVP_DigestInit_ex(c->ctx, c->md, NULL) != 1 || EVP_DigestUpdate(c->ctx, a, alen) != 1 ||
        (blen && EVP_DigestUpdate(c->ctx, b, blen) != 1) ||
        EVP_DigestFinal_ex(c->ctx, out, &n) != 1 || n != CHAIN_LEN)
        return CAIRN_ENOMEM; /* OpenSSL fails SHA-256 only when it cannot allocate */
    return CAIRN_OK;
}

int cairn__chain_leaf(cairn__chain *c, const uint8_t *rec, size_t len, uint8_t d[CHAIN_LEN])
{
    return sha256(c, rec, len, NULL, 0, d);
}

int cairn__chain_fold(cairn__chain *c, uint8_t h[CHAIN_LEN], const uint8_t d[CHAIN_LEN])
{
    return sha256(c, h, CHAIN_LEN, d, CHAIN_LEN, h);
}

int cairn__chain_step(cairn__chain *c, uint8_t h[CHAIN_LEN], const uint8_t *rec, size_t len)
{
    uint8_t d[CHAIN_LEN];
    int rc = cairn__chain_leaf(c, rec, len, d);
    return rc == CAIRN_OK ? cairn__chain_fold(c, h, d) : rc;
}

int cairn__chain_record(cairn__chain *c, uint8_t h[CHAIN_LEN], const cairn_record *rec,
                        const uint8_t *raw, size_t len, int compacted, int *how)
{
    if (how != NULL)
        *how = CHAIN_STEPPED;
    if (compacted && rec->type == CAIRN_REC_COMPACTED) {
        cairn__hole_chain hc;
        int r = cairn__hole_chain_read(rec->json, rec->json_len, &hc);
        if (r < 0)
            return CAIRN_ECORRUPT;
        if (r > 0) {
            int ok = memcmp(h, hc.in, CHAIN_LEN) == 0, rc = CAIRN_OK, k = CHAIN_BRIDGED;
            if (ok && hc.n_leaves > 0) {
                uint8_t x[CHAIN_LEN];
                memcpy(x, h, CHAIN_LEN);
                for (size_t i = 0; i < hc.n_leaves && rc == CAIRN_OK; i++)
                    rc = cairn__chain_fold(c, x, hc.leaves + CHAIN_LEN * i);
                ok = rc == CAIRN_OK && memcmp(x, hc.out, CHAIN_LEN) == 0;
                k = CHAIN_THROUGH;
            }
            memcpy(h, hc.out, CHAIN_LEN);
            cairn__hole_chain_free(&hc);
            if (rc != CAIRN_OK)
                return rc;
            if (how != NULL)
                *how = ok ? k : CHAIN_BROKEN;
            return CAIRN_OK;
        }
    }
    return cairn__chain_step(c, h, raw, len);
}

int cairn__chain_logseg(cairn__chain *c, const cairn_io *io, const char *site,
                        const cairn_allocator *a, int fd, const char *name, uint64_t salt,
                        uint64_t end, uint8_t h[CHAIN_LEN], uint64_t *last, cairn__err *e)
{
    size_t cap = 1u << 20, have = 0, pos = 0;
    uint64_t off = 64; /* the file offset of buf[0] */
    uint8_t *buf = cairn__malloc(a, cap);
    int rc = CAIRN_OK;

    if (buf == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "%s: no memory to read it", name);
    while (rc == CAIRN_OK && off + pos < end) {
        cairn_record rec;
        size_t len, got;
        rec_result r = cairn__record_decode(buf + pos, have - pos, salt, &rec, &len);
        if (r == REC_OK) {
            rc = cairn__chain_step(c, h, buf + pos, len);
            if (rc != CAIRN_OK)
                rc = cairn__fail(e, rc, "%s: no memory to hash it", name);
            *last = rec.seq;
            pos += len;
            continue;
        }
        if (r != REC_TRUNCATED && r != REC_END)
            break; /* damage: the scan of the segment reports it */
        /* Move the partial record to the front and read more after it. */
        memmove(buf, buf + pos, have - pos);
        off += pos;
        have -= pos;
        pos = 0;
        if (have >= 4) {
            size_t need = (size_t)(buf[0] | buf[1] << 8 | buf[2] << 16 | (uint32_t)buf[3] << 24);
            if (need > cap && cairn__grow(a, (void **)&buf, &cap, need, 1) != CAIRN_OK) {
                rc = cairn__fail(e, CAIRN_ENOMEM, "%s: no memory to read it", name);
                break;
            }
        }
        if (off + have >= end)
            break;
        {
            size_t want = cap - have;
            if (want > end - off - have)
                want = (size_t)(end - off - have);
            rc = cairn__io_read(io, site, fd, buf + have, want, off + have, &got, name, e);
            if (rc == CAIRN_OK && got == 0)
                break;
            have += got;
        }
    }
    cairn__free(a, buf);
    return rc;
}

void cairn__chain_hex(const uint8_t h[CHAIN_LEN], char out[2 * CHAIN_LEN + 1])
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < CHAIN_LEN; i++) {
        out[2 * i] = d[h[i] >> 4];
        out[2 * i + 1] = d[h[i] & 15];
    }
    out[2 * CHAIN_LEN] = '\0';
}

static int nibble(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

int cairn__chain_unhex(const char *s, size_t n, uint8_t h[CHAIN_LEN])
{
    if (n != 2 * CHAIN_LEN)
        return 0;
    for (size_t i = 0; i < CHAIN_LEN; i++) {
        int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return 0;
        h[i] = (uint8_t)(hi << 4 | lo);
    }
    return 1;
}
