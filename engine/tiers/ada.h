/*
 * ada.h - reading an ADA agent team's cognitive memory files into a plan
 * of tier operations, with no store, so that the parser can be fuzzed
 * (fuzz/fuzz_ada.c): bank.md (the core memory and lessons), stream.jsonl
 * (the memory stream) and rotation.json (the role rotation, whose history
 * holds reflections). cairn_tiers_import_ada (ada.c) applies a plan.
 */
#ifndef CAIRN_ADA_H
#define CAIRN_ADA_H

#include <stddef.h>

enum {
    ADA_CORE_SET = 0,    /* section, role (roleState), value */
    ADA_CORE_APPEND = 1, /* section, value */
    ADA_STREAM = 2,      /* value: the entry's JSON (a line of stream.jsonl) */
    ADA_REFLECT = 3      /* value: the reflection's JSON */
};

typedef struct ada_op {
    int kind;
    const char *section; /* static */
    char *role;
    char *value;
    char *where;         /* "bank.md line 12", "stream.jsonl line 3": for reports */
} ada_op;

/* What was not taken, and why. */
typedef struct ada_skip {
    char *where;
    char *why;
} ada_skip;

typedef struct ada_plan {
    ada_op *ops;
    size_t n, cap;
    ada_skip *skips;
    size_t n_skips, skip_cap;
} ada_plan;

/* Plan the import of the files given (any may be NULL: not there).
 * Never fails on content: what it cannot read becomes a skip. Errors:
 * CAIRN_ENOMEM only. */
int cairn__ada_plan(const char *bank, size_t bank_len, const char *stream, size_t stream_len,
                    const char *rotation, size_t rotation_len, ada_plan *out);

void cairn__ada_plan_free(ada_plan *p);

#endif /* CAIRN_ADA_H */
