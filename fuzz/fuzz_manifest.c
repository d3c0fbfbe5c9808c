/*
 * fuzz_manifest.c - cairn__manifest_decode() on the bytes of a MANIFEST
 * file. Run as given and with the header and trailer checksums repaired.
 *
 * Invariants: a failure returns a negative code and leaves nothing
 * allocated; a success of the newest version encodes back to exactly the
 * input bytes (every field and reserved byte is checked, so the encoding is
 * canonical), and decoding that again gives the same fields. An older one
 * re-encodes in the newest version to the same fields (a version 2 one
 * with the old default max_memories, 10000). A version 1 MANIFEST (no
 * store id) cannot be written back as it is: the encoder refuses a
 * manifest without an id.
 */
#include "fuzz.h"

#include "alloc.h"
#include "manifest.h"

static void same_manifest(const manifest *a, const manifest *b)
{
    FUZZ_CHECK(a->generation == b->generation && a->next_id == b->next_id &&
               a->segment_size == b->segment_size && a->batch_ms == b->batch_ms &&
               a->durability == b->durability && a->n == b->n &&
               memcmp(a->store_id, b->store_id, sizeof a->store_id) == 0 &&
               a->synced_seq == b->synced_seq && a->lost_total == b->lost_total &&
               a->max_memories == b->max_memories);
    for (size_t i = 0; i < a->n; i++) {
        const manifest_entry *x = &a->e[i], *y = &b->e[i];
        FUZZ_CHECK(x->id == y->id && x->kind == y->kind && x->base_seq == y->base_seq &&
                   x->last_seq == y->last_seq && x->count == y->count &&
                   x->first_ts == y->first_ts && x->last_ts == y->last_ts);
    }
}

static void one(const uint8_t *buf, size_t size)
{
    manifest m, m2, c;
    cairn__err e;
    uint8_t *out = NULL;
    size_t len = 0;
    int rc;

    memset(e.msg, 'x', sizeof e.msg); /* a failure must leave a message */
    rc = cairn__manifest_decode(buf, size, NULL, &m, &e);
    if (rc != CAIRN_OK) {
        FUZZ_CHECK(rc < 0 && m.e == NULL && m.n == 0);
        FUZZ_CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL);
        return;
    }
    FUZZ_CHECK(m.n >= 1 && m.n <= MAN_MAX_ENTRIES && m.e != NULL);
    FUZZ_CHECK(m.e[m.n - 1].kind == SEG_ACTIVE);
    if (cairn__manifest_encode(&m, NULL, &out, &len) != CAIRN_OK) {
        cairn__manifest_free(NULL, &m);
        return;
    }
    /* The newest version re-encodes to the same bytes; an older one to the
     * newest version, which decodes to the same manifest. */
    if (m.version == MAN_VERSION)
        FUZZ_CHECK(len == size && memcmp(out, buf, size) == 0);
    rc = cairn__manifest_decode(out, len, NULL, &m2, &e);
    FUZZ_CHECK(rc == CAIRN_OK);
    same_manifest(&m, &m2);
    if (cairn__manifest_copy(&m, NULL, &c) == CAIRN_OK) {
        same_manifest(&m, &c);
        cairn__manifest_free(NULL, &c);
    }
    cairn__manifest_free(NULL, &m2);
    cairn__manifest_free(NULL, &m);
    FUZZ_CHECK(m.e == NULL && m.n == 0);
    cairn__free(NULL, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = fuzz_dup(data, size);

    if (buf == NULL)
        return 0;
    one(buf, size);
    fuzz_fix_filehdr(buf, size);
    if (size >= FILEHDR_SIZE + 8)
        put_le64(buf + size - 8, XXH3_64bits(buf, size - 8));
    one(buf, size);
    free(buf);
    return 0;
}
