/*
 * fuzz_memkeys.c - cairn__memkeys_of_record() (engine/memory/memkeys.c),
 * the reader a storing writer takes others' store records with, over
 * arbitrary payload bytes. Input: byte 0 = the namespace's length (mod 8),
 * that many bytes of namespace, the rest = the JSON payload.
 *
 * Invariants: deterministic; no read past the payload (ASan); whenever it
 * takes a payload that the full decoder (cairn__memrec_decode) accepts as
 * a store record, the keys are those of the decoded id and content, and
 * the record is no commit of several; a payload the full decoder accepts
 * with a commit's mark is never taken.
 */
#include "fuzz.h"

#include "memkeys.h"
#include "memrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *ns, *json;
    size_t ns_len, len;
    uint64_t nk = 0, ck = 0, ik = 0, nk2 = 0, ck2 = 0, ik2 = 0;
    memrec r;
    int took, took2;

    if (size < 1)
        return 0;
    ns_len = data[0] % 8;
    if (size - 1 < ns_len)
        return 0;
    ns = (const char *)data + 1;
    json = ns + ns_len;
    len = size - 1 - ns_len;
    took = cairn__memkeys_of_record(ns, ns_len, json, len, &nk, &ck, &ik);
    took2 = cairn__memkeys_of_record(ns, ns_len, json, len, &nk2, &ck2, &ik2);
    FUZZ_CHECK(took == took2);
    FUZZ_CHECK(!took || (nk == nk2 && ck == ck2 && ik == ik2 && nk != 0 && ck != 0 && ik != 0));
    if (cairn__memrec_decode(CAIRN_REC_MEMORY, json, len, &r, NULL) != CAIRN_OK)
        return 0;
    if (r.batch_n >= 2)
        FUZZ_CHECK(!took);
    if (took) {
        FUZZ_CHECK(ik == cairn__memkeys_id_key(r.id, strlen(r.id)));
        FUZZ_CHECK(nk == cairn__memkeys_ns_key(ns, ns_len));
        FUZZ_CHECK(ck == cairn__memkeys_content_key(nk, r.content, r.content_len));
    }
    cairn__memrec_done(&r);
    return 0;
}
