/*
 * fuzz_ada.c - the reader of an ADA team's cognitive memory files
 * (engine/tiers/ada.c, cairn__ada_plan): the input is bank.md, a NUL,
 * stream.jsonl, a NUL, rotation.json (a part that is missing is an absent
 * file).
 *
 * Invariants: planning never fails but for memory; every operation has a
 * value and a place ("FILE line N"), a core operation a known section (a
 * set of roleState a role, of sprint none); a stream operation is one
 * non-blank line of stream.jsonl, as it is; every skip says where and why;
 * the same input plans the same operations twice.
 */
#include "fuzz.h"

#include "ada.h"

static const char *part(const uint8_t *d, size_t n, size_t *at, size_t *len)
{
    const uint8_t *z;
    if (*at > n)
        return NULL;
    z = memchr(d + *at, 0, n - *at);
    *len = z ? (size_t)(z - (d + *at)) : n - *at;
    {
        const char *p = (const char *)d + *at;
        *at += *len + 1;
        return p;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t at = 0, bl = 0, sl = 0, rl = 0;
    const char *bank = part(data, size, &at, &bl);
    const char *stream = part(data, size, &at, &sl);
    const char *rot = part(data, size, &at, &rl);
    ada_plan a, b;

    if (cairn__ada_plan(bank, bl, stream, sl, rot, rl, &a) != CAIRN_OK)
        return 0; /* no memory */
    FUZZ_CHECK(cairn__ada_plan(bank, bl, stream, sl, rot, rl, &b) == CAIRN_OK);
    FUZZ_CHECK(a.n == b.n && a.n_skips == b.n_skips);
    for (size_t i = 0; i < a.n; i++) {
        const ada_op *o = &a.ops[i];
        FUZZ_CHECK(o->value != NULL && o->where != NULL && o->where[0] != 0);
        FUZZ_CHECK(strcmp(o->value, b.ops[i].value) == 0 && o->kind == b.ops[i].kind);
        switch (o->kind) {
        case ADA_CORE_SET:
            FUZZ_CHECK(strcmp(o->section, "sprint") == 0 || strcmp(o->section, "roleState") == 0);
            FUZZ_CHECK((strcmp(o->section, "roleState") == 0) == (o->role != NULL && o->role[0] != 0));
            break;
        case ADA_CORE_APPEND:
            FUZZ_CHECK(strcmp(o->section, "threads") == 0 || strcmp(o->section, "blockers") == 0 ||
                       strcmp(o->section, "lessons") == 0);
            break;
        case ADA_STREAM: {
            size_t n = strlen(o->value);
            /* a line of the stream part, found there as it is */
            FUZZ_CHECK(stream != NULL && n <= sl);
            FUZZ_CHECK(strncmp(o->where, "stream.jsonl line ", 18) == 0);
            break;
        }
        case ADA_REFLECT:
            FUZZ_CHECK(rot != NULL && o->value[0] == '{');
            break;
        default:
            FUZZ_CHECK(0);
        }
    }
    for (size_t i = 0; i < a.n_skips; i++)
        FUZZ_CHECK(a.skips[i].where != NULL && a.skips[i].why != NULL && a.skips[i].why[0] != 0);
    cairn__ada_plan_free(&a);
    cairn__ada_plan_free(&b);
    return 0;
}
