/*
 * compact_overflow.c - a compacted segment whose block index counts one
 * record fewer than its block holds passes cairn_verify, and the next
 * compaction writes one byte past its verdict array (compact.c,
 * judge_one: verdict is sized by the footer's record_count).
 *
 * Build (ASan), from the repository root (fuzz/crashes/sealed/README.md):
 *   cc -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 -fsanitize=address \
 *      -Iengine/include -Iengine/common -Iengine/log -Iengine/text -Iengine/memory \
 *      -Iengine/vec -Iengine/graph -Iengine/reflexion \
 *      fuzz/crashes/sealed/compact_overflow.c $(find engine -name '*.c') \
 *      -lzstd -lxxhash -lutf8proc -lstemmer -lcjson -lm -pthread -o /tmp/compact_overflow
 *   rm -rf /tmp/co-store && /tmp/compact_overflow /tmp/co-store
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bytes.h"
#include "cairn.h"

static void check(int rc, const char *what)
{
    if (rc != CAIRN_OK) {
        fprintf(stderr, "%s: %s\n", what, cairn_strerror(rc));
        exit(2);
    }
}

static cairn_db *open_db(const char *dir, int create)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db = NULL;
    o.create = create;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_NONE;
    o.segment_size = 4096;
    o.retain = "live:0";
    if (cairn_open(&db, dir, &o, err, sizeof err) != CAIRN_OK) {
        fprintf(stderr, "open: %s\n", err);
        exit(2);
    }
    return db;
}

/* Block 0 of <dir>/<name>: count - 1, footer record_count - 1, sums redone. */
static void undercount(const char *dir, const char *name)
{
    char path[512];
    FILE *f;
    long n;
    uint8_t *b, *ft;
    uint64_t io;
    uint32_t nb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "r+b");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    b = malloc((size_t)n);
    if (fread(b, 1, (size_t)n, f) != (size_t)n)
        exit(2);
    ft = b + n - 80;
    io = get_le64(ft + 8);
    nb = get_le32(ft + 16);
    printf("%s: block 0 counts %u records; index and footer now say %u\n", name,
           get_le32(b + io + 48), get_le32(b + io + 48) - 1);
    put_le32(b + io + 48, get_le32(b + io + 48) - 1);
    put_le64(ft + 24, get_le64(ft + 24) - 1);
    put_le64(ft + 56, XXH3_64bits(b + io, (size_t)nb * 64));
    put_le64(ft + 64, XXH3_64bits(ft, 64));
    put_le64(b + n - 8, XXH3_64bits(b, (size_t)n - 8));
    rewind(f);
    fwrite(b, 1, (size_t)n, f);
    fclose(f);
    free(b);
}

static void problem(void *user, const char *file, uint64_t off, int code, const char *msg)
{
    (void)off;
    (void)code;
    printf("verify: %s: %s\n", file, msg);
    ++*(int *)user;
}

int main(int argc, char **argv)
{
    char ids[40][CAIRN_MEM_ID_MAX + 1];
    cairn_compact_report rep;
    uint64_t problems = 0;
    int n = 0;
    cairn_db *db;
    cairn_mem *m;

    if (argc != 2) {
        fprintf(stderr, "usage: %s NEW_STORE_DIR\n", argv[0]);
        return 2;
    }
    /* A compacted store: 40 memories, 30 deleted, compacted under live:0. */
    db = open_db(argv[1], 1);
    check(cairn_mem_open(db, NULL, &m), "mem_open");
    for (int i = 0; i < 40; i++) {
        cairn_mem_store_opts so = CAIRN_MEM_STORE_OPTS_INIT;
        cairn_memory *mem = NULL;
        char text[96];
        snprintf(text, sizeof text, "note %d about a topic with some padding words", i);
        check(cairn_mem_store(m, text, &so, &mem, NULL), "store");
        snprintf(ids[i], sizeof ids[i], "%s", mem->id);
        cairn_mem_free(mem);
    }
    for (int i = 0; i < 40; i++)
        if (i % 4 != 3)
            check(cairn_mem_delete(m, ids[i], NULL), "delete");
    check(cairn_mem_compact(m, 0, &rep), "compact");
    printf("first compaction: dropped %llu records\n", (unsigned long long)rep.dropped);
    cairn_mem_close(m);
    check(cairn_close(db), "close");

    /* The first segment's compacted file, its block count one short. */
    undercount(argv[1], "0000000000000001-00000001.seg");

    db = open_db(argv[1], 0);
    check(cairn_verify(db, problem, &n, &problems), "verify");
    printf("cairn_verify: %llu problems\n", (unsigned long long)problems);
    check(cairn_mem_open(db, NULL, &m), "mem_open");
    printf("compacting again...\n");
    fflush(stdout);
    check(cairn_mem_compact(m, 0, &rep), "compact"); /* ASan: heap-buffer-overflow */
    printf("second compaction returned OK\n");
    cairn_mem_close(m);
    check(cairn_close(db), "close");
    return 0;
}
