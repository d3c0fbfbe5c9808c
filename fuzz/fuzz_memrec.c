/*
 * fuzz_memrec.c - cairn__memrec_decode() over arbitrary payload bytes, for
 * each of the five memory record types (the first input byte picks it).
 * Input: byte 0 = type selector, the rest = the JSON payload.
 *
 * Invariants: decoding is deterministic; a payload that decodes encodes
 * again, and the encoded text decodes to the same fields (the writer can
 * always read back what it writes); every decoded string obeys its limit;
 * the hand-written encoder and the cJSON one write the same bytes; a
 * commit's mark ("batch":[i,n]) comes back as it was; an access record
 * comes back with its ids, time and, in the fold form, its counts, last
 * times, file and bytes folded; the flat scan (cairn__memrec_decode_scan)
 * gives what cJSON gives, code and every field.
 */
#include "fuzz.h"

#include "memrec.h"

static void same(const memrec *a, const memrec *b)
{
    FUZZ_CHECK(a->type == b->type);
    FUZZ_CHECK((a->id == NULL) == (b->id == NULL));
    if (a->id != NULL)
        FUZZ_CHECK(strcmp(a->id, b->id) == 0);
    FUZZ_CHECK(a->content_len == b->content_len);
    if (a->content != NULL)
        FUZZ_CHECK(memcmp(a->content, b->content, a->content_len) == 0);
    FUZZ_CHECK((a->category == NULL) == (b->category == NULL));
    if (a->category != NULL)
        FUZZ_CHECK(strcmp(a->category, b->category) == 0);
    FUZZ_CHECK(a->importance == b->importance);
    FUZZ_CHECK(a->created_at == b->created_at && a->accessed_at == b->accessed_at);
    FUZZ_CHECK(a->access_count == b->access_count);
    FUZZ_CHECK(a->expires_at == b->expires_at);
    FUZZ_CHECK(a->restored_from == b->restored_from);
    FUZZ_CHECK(a->n_ids == b->n_ids);
    FUZZ_CHECK((a->metadata == NULL) == (b->metadata == NULL));
    if (a->metadata != NULL)
        FUZZ_CHECK(strcmp(a->metadata, b->metadata) == 0);
    /* a commit's mark (a mark of a commit of one says nothing: not written) */
    FUZZ_CHECK((a->batch_n >= 2) == (b->batch_n >= 2));
    if (a->batch_n >= 2)
        FUZZ_CHECK(a->batch_i == b->batch_i && a->batch_n == b->batch_n && a->batch_i < a->batch_n);
}

/* The fields of memory.access, both forms. */
static void same_access(const memrec *a, const memrec *b)
{
    FUZZ_CHECK(a->n_ids == b->n_ids && a->accessed_at == b->accessed_at);
    for (size_t i = 0; i < a->n_ids; i++)
        FUZZ_CHECK(strcmp(a->ids[i], b->ids[i]) == 0);
    FUZZ_CHECK((a->counts == NULL) == (b->counts == NULL));
    if (a->counts == NULL)
        return;
    FUZZ_CHECK(a->acc_file != 0 && a->acc_file == b->acc_file && a->acc_upto == b->acc_upto);
    for (size_t i = 0; i < a->n_ids; i++)
        FUZZ_CHECK(a->counts[i] >= 1 && a->counts[i] == b->counts[i] && a->lasts[i] == b->lasts[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    memrec r, r2, r3;
    uint16_t type;
    char *json = NULL;
    size_t len = 0;
    int rc, rc2;

    if (size < 1)
        return 0;
    type = (uint16_t)(CAIRN_REC_MEMORY + data[0] % 5);
    rc = cairn__memrec_decode(type, (const char *)data + 1, size - 1, &r, NULL);
    rc2 = cairn__memrec_decode(type, (const char *)data + 1, size - 1, &r2, NULL);
    FUZZ_CHECK(rc == rc2);
    {
        /* the flat scan agrees with cJSON, whichever way it went */
        cairn__memscan sc = {NULL, 0};
        memrec f;
        int frc = cairn__memrec_decode_scan(&sc, type, (const char *)data + 1, size - 1, NULL, 0,
                                            &f, NULL);
        FUZZ_CHECK(frc == rc);
        if (frc == CAIRN_OK) {
            same(&r, &f);
            FUZZ_CHECK(r.has == f.has);
            FUZZ_CHECK((r.reason == NULL) == (f.reason == NULL));
            if (r.reason != NULL)
                FUZZ_CHECK(strcmp(r.reason, f.reason) == 0);
            cairn__memrec_done(&f);
        }
        cairn__memscan_free(&sc);
    }
    if (rc != CAIRN_OK) {
        FUZZ_CHECK(rc == CAIRN_ECORRUPT || rc == CAIRN_ENOMEM);
        return 0;
    }
    same(&r, &r2);
    if (r.id != NULL)
        FUZZ_CHECK(cairn__memrec_id_ok(r.id));
    if (r.category != NULL)
        FUZZ_CHECK(strlen(r.category) >= 1 && strlen(r.category) <= MEM_CATEGORY_MAX);
    FUZZ_CHECK(r.importance >= 0.0 && r.importance <= 1.0);
    FUZZ_CHECK(cairn__memrec_encode(&r, &json, &len, NULL) == CAIRN_OK);
    FUZZ_CHECK(cairn__memrec_decode(type, json, len, &r3, NULL) == CAIRN_OK);
    if (type != CAIRN_REC_MEMORY_ACCESS && type != CAIRN_REC_MEMORY_CLEAR)
        same(&r, &r3);
    if (type == CAIRN_REC_MEMORY_ACCESS)
        same_access(&r, &r3);
    {
        /* the hand-written encoder writes cJSON's bytes */
        char *g = NULL;
        size_t glen = 0;
        FUZZ_CHECK(cairn__memrec_encode_generic(&r, &g, &glen, NULL) == CAIRN_OK);
        FUZZ_CHECK(glen == len && memcmp(g, json, len) == 0);
        free(g);
    }
    free(json);
    cairn__memrec_done(&r);
    cairn__memrec_done(&r2);
    cairn__memrec_done(&r3);
    return 0;
}
