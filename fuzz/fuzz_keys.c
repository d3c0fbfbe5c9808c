/*
 * fuzz_keys.c - KEYS, the key sets a store's writers share
 * (format-spec/keys.md): cairn__keyfile_check() on the first 4096 bytes
 * (header and counts) of a file of the size the header names, against the
 * header's own boot or another, and a log end taken from the input; then,
 * when the file passes and is small (at most 2^12 slots a set), the sets
 * over a file filled with the rest of the input, repeated: lookups and
 * adds as a writer's turn makes them. Run as given and with the header
 * sum repaired (so that mutations reach the counts' checks).
 *
 * Invariants: a file that fails says why (CAIRN_ECORRUPT, _ECHECKSUM or
 * _EVERSION, with a message); one that passes has base <= covered <= the
 * log's end, at most half its slots in use and at most 32 namespaces. Over
 * any sets (a damaged file's too) every lookup ends, a key added is found
 * after, and an add that fails leaves the count as it was.
 */
#include "fuzz.h"

#include "keyfile.h"
#include "memkeys.h"

static void sets(const uint8_t *data, size_t size, uint64_t slots)
{
    size_t len = (size_t)KEYS_FILE_SIZE(slots);
    uint8_t *f = malloc(len);
    cairn__memkeys k;
    cairn__memkeys_core core;

    if (f == NULL)
        return;
    memcpy(f, data, KEYS_OFF_TABLES);
    for (size_t i = KEYS_OFF_TABLES; i < len; i++) {
        size_t rest = size - KEYS_OFF_TABLES; /* the input's bytes after its head, repeated */
        f[i] = size > KEYS_OFF_TABLES ? data[KEYS_OFF_TABLES + (i - KEYS_OFF_TABLES) % rest] : 0;
    }
    memcpy(&core, f + KEYS_OFF_CORE, sizeof core);
    memset(&k, 0, sizeof k);
    cairn__memkeys_attach(&k, &core, (uint64_t *)(void *)(f + KEYS_OFF_TABLES),
                          (uint64_t *)(void *)(f + KEYS_OFF_TABLES) + slots, (size_t)slots);
    for (size_t i = 0; i + 24 <= size && i < 24 * 64; i += 24) {
        uint64_t nk = get_le64(data + i) | 1, ck = get_le64(data + i + 8) | 1,
                 ik = get_le64(data + i + 16) | 1, before = cairn__memkeys_count(&k),
                 in_ns = cairn__memkeys_in_ns(&k, nk);
        int rc;
        (void)cairn__memkeys_has_content(&k, ck);
        (void)cairn__memkeys_has_id(&k, ik);
        rc = cairn__memkeys_add(&k, nk, ck, ik);
        if (rc == CAIRN_OK) {
            FUZZ_CHECK(cairn__memkeys_has_content(&k, ck) && cairn__memkeys_has_id(&k, ik));
            FUZZ_CHECK(cairn__memkeys_count(&k) == before + 1);
            FUZZ_CHECK(cairn__memkeys_in_ns(&k, nk) == in_ns + 1);
        } else {
            FUZZ_CHECK(rc == CAIRN_ENOMEM || rc == CAIRN_EINVAL);
            FUZZ_CHECK(cairn__memkeys_count(&k) == before);
        }
    }
    cairn__memkeys_detach(&k);
    free(f);
}

static void one(const uint8_t *data, size_t size)
{
    uint64_t slots = 0, boot, log_end, file_size;
    cairn__err e;
    int rc;

    if (size < FILEHDR_SIZE)
        return;
    boot = get_le64(data + KEYS_OFF_BOOT) ^ (data[size - 1] & 1); /* its own, or another */
    log_end = size >= 80 ? get_le64(data + 72) + data[size - 1] / 2 : data[size - 1];
    file_size = KEYS_FILE_SIZE(get_le64(data + KEYS_OFF_SLOTS) & (KEYS_SLOTS_MAX * 2 - 1));
    memset(e.msg, 'x', sizeof e.msg);
    rc = cairn__keyfile_check(data, size, file_size, boot, NULL, log_end, &slots, &e);
    if (rc != CAIRN_OK) {
        FUZZ_CHECK(rc == CAIRN_ECORRUPT || rc == CAIRN_ECHECKSUM || rc == CAIRN_EVERSION);
        FUZZ_CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL && e.msg[0] != 0);
        FUZZ_CHECK(slots == 0);
        return;
    }
    {
        cairn__memkeys_core c;
        FUZZ_CHECK(size >= KEYS_OFF_TABLES && slots >= KEYS_SLOTS_MIN && slots <= KEYS_SLOTS_MAX);
        memcpy(&c, data + KEYS_OFF_CORE, sizeof c);
        FUZZ_CHECK(c.base <= c.covered && c.covered <= log_end);
        FUZZ_CHECK(c.n <= slots / 2 && c.n_ns <= CAIRN__MEMKEYS_NS);
    }
    if (slots <= (1u << 12))
        sets(data, size, slots);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;
    one(data, size);
    if (size == 0 || (copy = fuzz_dup(data, size)) == NULL)
        return 0;
    fuzz_fix_filehdr(copy, size);
    one(copy, size);
    free(copy);
    return 0;
}
