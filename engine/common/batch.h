/*
 * batch.h - a commit of several records that readers take whole or not at
 * all (format-spec/record.md, "Commits of several records").
 *
 * cairn_append_batch gives the records of one call consecutive sequence
 * numbers and writes them in one write, but a write is not atomic on disk:
 * a kill inside it, a power cut or a full disk can leave a prefix of the
 * batch as valid records, which recovery keeps (it keeps every valid
 * record). So the engine's JSON record types mark each record of a commit
 * of n >= 2 records with its place in it, "batch":[i,n] (0 <= i < n), and
 * a reader applies the record at seq s marked [i,n] only when the record
 * at s - i + n - 1 is in the log and is marked [n-1,n]. The log loses
 * records only at its tail, so the last one being there means every one
 * before it is; and no record of another commit can stand there with that
 * mark (it would have to begin at s - i, where this commit begins).
 *
 * The rule is a function of the log alone, not of where a replay began:
 * an index file folded up to any seq and a replay from seq 1 agree. A
 * reader that looks while the writer is still writing the commit takes
 * none of it, and stops there until it is whole (CAIRN_BATCH_PENDING).
 */
#ifndef CAIRN_BATCH_H
#define CAIRN_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"

struct cJSON;

/* The largest n a reader accepts (JSON numbers are exact below 2^53). */
#define CAIRN_BATCH_MAX 9007199254740992.0

/* The mark of a parsed record payload: 0 if it has none, 1 with *i and *n
 * set, -1 if "batch" is there but is not [i,n] with 0 <= i < n <= 2^53
 * (the record is corrupt). */
int cairn__batch_get(const struct cJSON *root, uint64_t *i, uint64_t *n);

/* What a reader makes of a commit (cairn__batch_check). */
#define CAIRN_BATCH_TORN 0    /* cut short for good: apply none of it */
#define CAIRN_BATCH_WHOLE 1   /* every record is in the log: apply it */
#define CAIRN_BATCH_PENDING 2 /* a read-only handle's log ends inside it and
                                 the writer may still be writing it: stop
                                 folding before it, and look again later */

/* What a reader last learned of a commit for good (zeroed: nothing). */
typedef struct cairn__batch {
    uint64_t last;  /* seq of the commit's last record (0: none asked yet) */
    uint64_t n;     /* its number of records */
    int verdict;    /* CAIRN_BATCH_WHOLE or CAIRN_BATCH_TORN */
} cairn__batch;

/* What to do with the record at seq marked [i,n]: *verdict gets one of
 * the CAIRN_BATCH_* above. Reads the commit's last record once per commit
 * (b remembers a verdict for good for the others). When it is not there:
 * a writer's handle knows the commit is torn (every commit of its own
 * process is appended whole under the log's lock); so does a read-only
 * handle when no writer holds LOCK; else it reads the newest record of
 * the log too, and the commit is pending if that record is still one of
 * it, torn if another record follows it.
 * Errors: those of cairn_get other than CAIRN_ENOTFOUND (CAIRN_EIO,
 * CAIRN_ECHECKSUM, CAIRN_ECORRUPT, CAIRN_ENOMEM; the handle's message says
 * where). */
int cairn__batch_check(cairn_db *db, cairn__batch *b, uint64_t seq, uint64_t i, uint64_t n,
                       int *verdict);

#endif /* CAIRN_BATCH_H */
