/*
 * fuzz_memimport.c - cairn_mem_import() of arbitrary bytes as json, md,
 * csv or jsonl (the first byte picks the format) into a real store, created once in
 * a temporary directory (durability none, no background thread).
 *
 * Invariants: the import returns CAIRN_OK, CAIRN_EINVAL (with a message)
 * or CAIRN_ENOMEM; a failed import appends nothing; a successful one
 * appends exactly `imported` records, its export follows the rule for text
 * (valid UTF-8 without NUL: what was imported was all text), and exporting
 * in the same format and importing that again imports nothing (all
 * skipped).
 */
#include "fuzz.h"

#include "utf8.h"

#include <stdlib.h>

static cairn_db *db;
static cairn_mem *mem;
static char dir[64];

/* The store is flat (files only): remove them and the directory at exit. */
static void remove_store(void)
{
    cairn_mem_close(mem);
    cairn_close(db);
    fuzz_store_remove(dir);
}

/* Records in the log: an import appends one per memory it imports. */
static uint64_t records(void)
{
    cairn_stats s;
    FUZZ_CHECK(cairn_stats_get(db, &s) == CAIRN_OK);
    return s.records;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cairn_mem_format f;
    uint64_t before, imported = 0, skipped = 0, im2 = 0, sk2 = 0;
    char *out = NULL;
    size_t len = 0;
    int rc;

    if (db == NULL) {
        db = fuzz_store_open(dir, sizeof dir, "import");
        FUZZ_CHECK(cairn_mem_open(db, NULL, &mem) == CAIRN_OK);
        atexit(remove_store);
    }
    if (size < 1)
        return 0;
    f = (cairn_mem_format)(data[0] % 4);
    before = records();
    rc = cairn_mem_import(mem, f, (const char *)data + 1, size - 1, NULL, &imported, &skipped);
    FUZZ_CHECK(rc == CAIRN_OK || rc == CAIRN_EINVAL || rc == CAIRN_ENOMEM);
    if (rc != CAIRN_OK) {
        FUZZ_CHECK(cairn_mem_errmsg(mem)[0] != 0 || rc == CAIRN_ENOMEM);
        FUZZ_CHECK(records() == before);
        return 0;
    }
    FUZZ_CHECK(records() == before + imported);
    if (imported > 0) {
        FUZZ_CHECK(cairn_mem_export(mem, f, &out, &len) == CAIRN_OK);
        FUZZ_CHECK(cairn__utf8_bad(out, len, NULL) == len);
        FUZZ_CHECK(cairn_mem_import(mem, f, out, len, NULL, &im2, &sk2) == CAIRN_OK);
        FUZZ_CHECK(im2 == 0);
        free(out);
        FUZZ_CHECK(cairn_mem_clear(mem, NULL) == CAIRN_OK);
    }
    return 0;
}
