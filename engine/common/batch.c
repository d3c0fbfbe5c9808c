/*
 * batch.c - see batch.h and format-spec/record.md ("Commits of several
 * records"): the mark of a record of a multi-record commit, and whether
 * the commit is whole in the log.
 */
#include "batch.h"

#include <cjson/cJSON.h>
#include <math.h>

#include "hole.h"
#include "store.h"

static int exact_count(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > CAIRN_BATCH_MAX ||
        v->valuedouble != floor(v->valuedouble))
        return 0;
    *out = (uint64_t)v->valuedouble;
    return 1;
}

int cairn__batch_get(const cJSON *root, uint64_t *i, uint64_t *n)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "batch");
    *i = *n = 0;
    if (b == NULL)
        return 0;
    if (!cJSON_IsArray(b) || cJSON_GetArraySize(b) != 2 || !exact_count(b->child, i) ||
        !exact_count(b->child->next, n) || *i >= *n) {
        *i = *n = 0;
        return -1;
    }
    return 1;
}

/* Whether the record at seq is in the log (*found) and carries the mark
 * [i,n] (*marked). */
static int has_mark(cairn_db *db, uint64_t seq, uint64_t i, uint64_t n, int *found, int *marked)
{
    cairn_record *rec = NULL;
    cJSON *root;
    uint64_t ri, rn;
    int hole = 0, rc = cairn__record_covering(db, seq, &rec, &hole);

    *found = *marked = 0;
    if (rc == CAIRN_ENOTFOUND)
        return CAIRN_OK; /* cut off, retired, or not written yet */
    if (rc != CAIRN_OK)
        return rc;
    *found = 1;
    if (hole) {
        /* Compaction dropped it; its hole lists the commits it ended. */
        *marked = i == n - 1 && cairn__hole_has_end(rec->json, rec->json_len, seq, n);
        cairn_record_free(db, rec);
        return CAIRN_OK;
    }
    /* A payload that is no JSON object carries no mark. */
    root = cJSON_ParseWithLength(rec->json, rec->json_len);
    *marked = cJSON_IsObject(root) && cairn__batch_get(root, &ri, &rn) == 1 && ri == i && rn == n;
    cJSON_Delete(root);
    cairn_record_free(db, rec);
    return CAIRN_OK;
}

int cairn__batch_check(cairn_db *db, cairn__batch *b, uint64_t seq, uint64_t i, uint64_t n,
                       int *verdict)
{
    uint64_t first, last, newest;
    int rc, found, marked;

    *verdict = CAIRN_BATCH_TORN;
    if (i >= n || seq < i || seq - i > UINT64_MAX - (n - 1))
        return CAIRN_OK; /* no commit can be so placed */
    if (n == 1) {
        *verdict = CAIRN_BATCH_WHOLE;
        return CAIRN_OK;
    }
    first = seq - i;
    last = first + n - 1;
    if (b->last == last && b->n == n) {
        *verdict = b->verdict;
        return CAIRN_OK;
    }
    if ((rc = has_mark(db, last, n - 1, n, &found, &marked)) != CAIRN_OK)
        return rc;
    if (!found && cairn__other_writer_live(db)) {
        /* A writer may be writing it. The log as the lookup saw it, or
         * newer: its last record. (With no writer live, whoever wrote
         * the part there is gone: cut short for good.) */
        newest = cairn__handed_seq(db);
        if (newest >= last) {
            /* It reaches past the commit's end now: look at that end again
             * (the lookup may have seen an older log). */
            rc = has_mark(db, last, n - 1, n, &found, &marked);
        } else if (newest >= first) {
            int ours = 0;
            rc = has_mark(db, newest, newest - first, n, &found, &ours);
            if (rc == CAIRN_OK && ours) {
                *verdict = CAIRN_BATCH_PENDING; /* the log ends inside it */
                return CAIRN_OK;
            }
            found = marked = 0; /* another record follows the part of it there is */
        }
        if (rc != CAIRN_OK)
            return rc;
    } else if (!found) {
        /* No writer in a turn now; one may have finished the commit
         * between the lookup and the probe: a lookup after the probe sees
         * the log as the last writer left it. */
        if ((rc = has_mark(db, last, n - 1, n, &found, &marked)) != CAIRN_OK)
            return rc;
    }
    *verdict = found && marked ? CAIRN_BATCH_WHOLE : CAIRN_BATCH_TORN;
    b->last = last;
    b->n = n;
    b->verdict = *verdict;
    return CAIRN_OK;
}
