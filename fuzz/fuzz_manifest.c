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
 * manifest without an id. Version 4 adds the retention policy (memories,
 * grace, event limits), dropped_upto and each entry's rev: read as 0 from an
 * older version, carried over by encode and copy; a success obeys their
 * rules (a policy known, a grace only under "live" and at most 2^53,
 * dropped_upto below 2^62, a rev only on a sealed entry). Version 8 adds
 * each entry's hash chain value: only on a sealed entry, carried over by
 * encode and copy. Version 9 adds the list of derived files: ordered by
 * kind then seq, known kinds, each at least a header long; none read from
 * an older version (decode alone does not look at a directory); carried
 * over by encode and copy.
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
    FUZZ_CHECK(a->retain.memories == b->retain.memories &&
               a->retain.grace_ms == b->retain.grace_ms &&
               a->retain.events_max_age_ms == b->retain.events_max_age_ms &&
               a->retain.events_max_bytes == b->retain.events_max_bytes &&
               a->dropped_upto == b->dropped_upto);
    for (size_t i = 0; i < a->n; i++) {
        const manifest_entry *x = &a->e[i], *y = &b->e[i];
        FUZZ_CHECK(x->id == y->id && x->kind == y->kind && x->base_seq == y->base_seq &&
                   x->last_seq == y->last_seq && x->count == y->count &&
                   x->first_ts == y->first_ts && x->last_ts == y->last_ts && x->rev == y->rev);
        FUZZ_CHECK(x->chained == y->chained && memcmp(x->chain, y->chain, sizeof x->chain) == 0);
    }
    FUZZ_CHECK(a->n_files == b->n_files);
    for (size_t i = 0; i < a->n_files; i++)
        FUZZ_CHECK(a->files[i].kind == b->files[i].kind && a->files[i].seq == b->files[i].seq &&
                   a->files[i].len == b->files[i].len && a->files[i].sum == b->files[i].sum);
}

/* The rules of what decoded, version 4's among them. */
static void check_rules(const manifest *m)
{
    FUZZ_CHECK(m->version >= 1 && m->version <= MAN_VERSION);
    FUZZ_CHECK(m->retain.memories == CAIRN_RETAIN_ALL || m->retain.memories == CAIRN_RETAIN_LIVE);
    FUZZ_CHECK(m->retain.grace_ms <= CAIRN_RETAIN_GRACE_MAX);
    FUZZ_CHECK(m->retain.memories == CAIRN_RETAIN_LIVE || m->retain.grace_ms == 0);
    FUZZ_CHECK(m->retain.events_max_age_ms <= CAIRN_RETAIN_GRACE_MAX &&
               m->retain.events_max_bytes <= CAIRN_RETAIN_GRACE_MAX);
    FUZZ_CHECK(m->dropped_upto < MAN_SEQ_MAX);
    if (m->version < 4)
        FUZZ_CHECK(m->retain.memories == 0 && m->retain.grace_ms == 0 &&
                   m->retain.events_max_age_ms == 0 && m->retain.events_max_bytes == 0 &&
                   m->dropped_upto == 0);
    for (size_t i = 0; i < m->n; i++) {
        const manifest_entry *x = &m->e[i];
        FUZZ_CHECK(x->rev == 0 || (m->version >= 4 && x->kind == SEG_SEALED));
        /* version 8: a chain value only on a sealed entry */
        FUZZ_CHECK(!x->chained || (m->version >= 8 && x->kind == SEG_SEALED));
        FUZZ_CHECK(x->id != 0 && x->id < m->next_id && (i == 0 || x->id > m->e[i - 1].id));
        if (x->kind != SEG_ACTIVE)
            FUZZ_CHECK(x->count == x->last_seq + 1 - x->base_seq);
    }
    FUZZ_CHECK(m->n_files <= MAN_FILES_MAX && (m->version >= 9 || m->n_files == 0));
    for (size_t i = 0; i < m->n_files; i++) {
        const manifest_file *f = &m->files[i];
        FUZZ_CHECK(f->kind >= MAN_FILE_MEMINDEX && f->kind <= MAN_FILE_GRAPHGEN);
        FUZZ_CHECK(f->seq < MAN_SEQ_MAX && f->len >= FILEHDR_SIZE);
        FUZZ_CHECK(i == 0 || f->kind > m->files[i - 1].kind ||
                   (f->kind == m->files[i - 1].kind && f->seq > m->files[i - 1].seq));
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
        FUZZ_CHECK(rc < 0 && m.e == NULL && m.n == 0 && m.files == NULL && m.n_files == 0);
        FUZZ_CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL);
        return;
    }
    FUZZ_CHECK(m.n >= 1 && m.n <= MAN_MAX_ENTRIES && m.e != NULL);
    FUZZ_CHECK(m.e[m.n - 1].kind == SEG_ACTIVE);
    check_rules(&m);
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
