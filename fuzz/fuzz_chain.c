/*
 * fuzz_chain.c - the hash chain never vouches for a changed history
 * (format-spec/chain.md).
 *
 * Once per process, a template store is made in a temp directory: events
 * in 4 KiB segments, so several are sealed (their chain values in the
 * MANIFEST) and one is active, and a compaction drops every fourth event
 * (holes carrying the chain before and after them); its head H = (S, hash)
 * is taken and its records 1..S are kept. Each input is a list of edits, applied to a fresh
 * copy of the store, 8 bytes each:
 *
 *   byte 0  op % 6: 0 flip a byte, 1 forge a record of a log segment (a
 *           byte of it changed and its checksum repaired, as a forger
 *           would), 2 forge a record of a sealed segment (the same, and the
 *           file's frames, index and footer written anew), 3 cut a file at
 *           an offset, 4 remove a file, 5 swap two files' contents
 *   byte 1  which file (of the store's files in name order, LOCK left out;
 *           for ops 1 and 2, of its .log or .seg files)
 *   bytes 2..5  an offset (u32), bytes 6..7 a value
 *
 * Invariant: when the copy opens and cairn_verify_head(H) says the head
 * is proven, the copy holds exactly the template's records 1..S (seq,
 * timestamp, type, namespace, payload, binary trailer), and its holes stand
 * for the same seqs. (A hole's other members, its why and counts, are
 * covered by its checksum, not by the chain: format-spec/chain.md.)
 */
#include "fuzz.h"

#include <sys/stat.h>

#include "compact.h"
#include "hole.h"
#include "sealed.h"
#include "store.h"

#define MAX_FILES 64
#define N_EVENTS 90

typedef struct tfile {
    char name[256 + 16];
    uint8_t *b;
    size_t len;
} tfile;

typedef struct trec {
    uint64_t seq;
    int64_t ts;
    uint16_t type;
    char *ns, *json, *bin;
    size_t ns_len, json_len, bin_len;
} trec;

static char g_tmpl[64], g_work[64];
static tfile g_files[MAX_FILES];
static size_t g_nfiles;
static trec g_recs[N_EVENTS + 8];
static size_t g_nrecs;
static cairn_head g_head;

static char *dup_bytes(const void *p, size_t n)
{
    char *d = malloc(n ? n : 1);
    FUZZ_CHECK(d != NULL);
    if (n)
        memcpy(d, p, n);
    return d;
}

static void read_all(const char *dir, tfile *f)
{
    char path[400];
    FILE *fp;
    snprintf(path, sizeof path, "%s/%.255s", dir, f->name);
    fp = fopen(path, "rb");
    if (fp == NULL)
        fprintf(stderr, "fuzz_chain: cannot read %s\n", path);
    FUZZ_CHECK(fp != NULL);
    fseek(fp, 0, SEEK_END);
    f->len = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    f->b = malloc(f->len ? f->len : 1);
    FUZZ_CHECK(f->b != NULL && fread(f->b, 1, f->len, fp) == f->len);
    fclose(fp);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const tfile *)a)->name, ((const tfile *)b)->name);
}

/* Remove a directory of plain files. */
static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            unlinkat(dirfd(d), de->d_name, 0);
    closedir(d);
    rmdir(dir);
}

static void cleanup(void)
{
    rm_dir(g_work);
    rm_dir(g_tmpl);
}

/* The template's compaction: every fourth event goes. */
static int drop_some(void *u, const cairn_record *rec, int *verdict)
{
    int k = -1;
    (void)u;
    *verdict = CAIRN__KEEP;
    if (rec->type == CAIRN_REC_EVENT && sscanf(rec->json, "{\"k\":%d", &k) == 1 && k % 4 == 1)
        *verdict = CAIRN__DROP_UNREAD;
    return CAIRN_OK;
}

static void make_template(void)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX];
    cairn_db *db = NULL;
    cairn_iter *it = NULL;
    cairn_record r;
    DIR *d;
    struct dirent *de;

    snprintf(g_tmpl, sizeof g_tmpl, "/tmp/cairn-fuzz-chain.XXXXXX");
    snprintf(g_work, sizeof g_work, "/tmp/cairn-fuzz-chainw.XXXXXX");
    FUZZ_CHECK(mkdtemp(g_tmpl) != NULL && mkdtemp(g_work) != NULL);
    atexit(cleanup);
    o.create = 1;
    o.background = 0;
    o.durability = CAIRN_DURABILITY_NONE;
    o.segment_size = 4096;
    FUZZ_CHECK(cairn_open(&db, g_tmpl, &o, err, sizeof err) == CAIRN_OK);
    for (int k = 0; k < N_EVENTS; k++) {
        char json[96];
        cairn_entry en;
        memset(&en, 0, sizeof en);
        snprintf(json, sizeof json, "{\"k\":%d,\"pad\":\"%032d\"}", k, k * 7);
        en.type = k % 5 == 0 ? 0x8001 : CAIRN_REC_EVENT;
        en.ns = k % 2 ? "a" : "bb";
        en.ns_len = strlen(en.ns);
        en.json = json;
        en.json_len = strlen(json);
        en.bin = k % 3 == 0 ? "\x01\x02\x03\x04" : NULL;
        en.bin_len = k % 3 == 0 ? 4 : 0;
        FUZZ_CHECK(cairn_append(db, &en, NULL) == CAIRN_OK);
    }
    {
        cairn__compact_result cr;
        FUZZ_CHECK(cairn_seal(db) == CAIRN_OK);
        FUZZ_CHECK(cairn__compact_lock(db, 1) == CAIRN_OK);
        FUZZ_CHECK(cairn__compact(db, "fuzz", 0, NULL, 0, drop_some, NULL, NULL, NULL, NULL,
                                  &cr) == CAIRN_OK && cr.rewritten > 0);
        (void)cairn__compact_lock(db, 0);
    }
    FUZZ_CHECK(cairn_close(db) == CAIRN_OK);
    o.create = 0;
    o.read_only = 1;
    FUZZ_CHECK(cairn_open(&db, g_tmpl, &o, err, sizeof err) == CAIRN_OK);
    FUZZ_CHECK(cairn_head_get(db, &g_head) == CAIRN_OK && g_head.seq == N_EVENTS);
    FUZZ_CHECK(cairn_iter_open(db, NULL, &it) == CAIRN_OK);
    while (cairn_iter_next(it, &r) == CAIRN_OK && g_nrecs < N_EVENTS + 8) {
        trec *t = &g_recs[g_nrecs++];
        t->seq = r.seq;
        t->ts = r.ts_ms;
        t->type = r.type;
        t->ns = dup_bytes(r.ns, t->ns_len = r.ns_len);
        t->json = dup_bytes(r.json, t->json_len = r.json_len);
        t->bin = dup_bytes(r.bin, t->bin_len = r.bin_len);
    }
    cairn_iter_close(it);
    cairn_close(db);
    {
        size_t holes = 0;
        for (size_t i = 0; i < g_nrecs; i++)
            holes += g_recs[i].type == CAIRN_REC_COMPACTED;
        FUZZ_CHECK(holes > 10 && g_nrecs <= N_EVENTS);
    }
    d = opendir(g_tmpl);
    FUZZ_CHECK(d != NULL);
    while ((de = readdir(d)) != NULL && g_nfiles < MAX_FILES) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, "LOCK") == 0)
            continue;
        snprintf(g_files[g_nfiles].name, sizeof g_files[g_nfiles].name, "%s", de->d_name);
        read_all(g_tmpl, &g_files[g_nfiles++]);
    }
    closedir(d);
    qsort(g_files, g_nfiles, sizeof *g_files, by_name);
}

/* A record of a log segment's bytes: the k-th, a byte of it changed, its
 * checksum right again. */
static void forge_log(uint8_t *b, size_t len, uint32_t k, uint16_t val)
{
    size_t p = 64, n = 0;
    uint64_t salt;
    if (len < 64 || memcmp(b, "CAIRNLOG", 8) != 0)
        return;
    salt = get_le64(b + 24);
    for (size_t q = 64; q + 40 <= len; n++) {
        size_t l = get_le32(b + q);
        if (l < 40 || q + l > len)
            break;
        q += l;
    }
    if (n == 0)
        return;
    for (k %= (uint32_t)n; k > 0; k--)
        p += get_le32(b + p);
    {
        size_t l = get_le32(b + p), at = 8 + (val >> 8) % (l - 16);
        b[p + at] ^= (uint8_t)(val | 1);
        put_le64(b + p + l - 8, XXH3_64bits_withSeed(b + p, l - 8, salt));
    }
}

/* The same in a sealed file: inflate its blocks, change the k-th record,
 * write the file anew with every checksum right. */
static void forge_sealed(tfile *f, uint32_t k, uint16_t val)
{
    sealed_seg s;
    cairn__err e;
    cairn__sealw w;
    uint8_t *raw = NULL;
    size_t cap = 0, raw_len, seen = 0;
    uint64_t size;
    char tmpname[64];
    int dfd, ok = 1;
    if (cairn__sealed_open(f->b, f->len, &s, f->name, &e) != CAIRN_OK || s.record_count == 0)
        return;
    k %= (uint32_t)s.record_count;
    dfd = open(g_work, O_RDONLY | O_DIRECTORY);
    FUZZ_CHECK(dfd >= 0);
    snprintf(tmpname, sizeof tmpname, "forged.seg"); /* within LOGSEG_NAME_MAX */
    if (cairn__sealw_begin(&w, cairn_io_default(), NULL, dfd, tmpname, s.id, s.salt, s.base_seq,
                           s.created_ms, 0, s.dict, s.dict_len, &e) != CAIRN_OK) {
        close(dfd);
        return;
    }
    for (uint32_t i = 0; i < s.block_count && ok; i++) {
        sealed_block blk;
        cairn__sealed_block(&s, i, &blk);
        if (cairn__sealed_read_block(&s, i, NULL, &raw, &cap, &raw_len, f->name, &e) != CAIRN_OK) {
            ok = 0;
            break;
        }
        for (size_t pos = 0; pos + 40 <= raw_len; seen++) {
            size_t l = get_le32(raw + pos);
            if (l < 40 || pos + l > raw_len)
                break;
            if (seen == k) {
                size_t at = 8 + (val >> 8) % (l - 16);
                raw[pos + at] ^= (uint8_t)(val | 1);
                put_le64(raw + pos + l - 8, XXH3_64bits_withSeed(raw + pos, l - 8, s.salt));
            }
            pos += l;
        }
        ok = cairn__sealw_block(&w, raw, raw_len, blk.first_seq, blk.last_seq, blk.first_ts,
                                blk.last_ts, blk.count, &e) == CAIRN_OK;
    }
    if (ok && cairn__sealw_finish(&w, &size, &e) == CAIRN_OK) {
        tfile forged;
        snprintf(forged.name, sizeof forged.name, "%s", tmpname);
        read_all(g_work, &forged);
        free(f->b);
        f->b = forged.b;
        f->len = forged.len;
        unlinkat(dfd, tmpname, 0);
    } else if (!ok) {
        cairn__sealw_abort(&w);
    }
    free(raw);
    close(dfd);
}

/* The store's files, edited, written to g_work. */
static void write_copy(tfile *files, size_t n)
{
    rm_dir(g_work);
    FUZZ_CHECK(mkdir(g_work, 0700) == 0);
    for (size_t i = 0; i < n; i++) {
        char path[400];
        FILE *fp;
        if (files[i].b == NULL)
            continue; /* removed */
        snprintf(path, sizeof path, "%s/%.255s", g_work, files[i].name);
        fp = fopen(path, "wb");
        FUZZ_CHECK(fp != NULL);
        FUZZ_CHECK(files[i].len == 0 || fwrite(files[i].b, 1, files[i].len, fp) == files[i].len);
        fclose(fp);
    }
}

/* The last seq a hole stands for (0 when it does not read). */
static uint64_t hole_upto(const cairn_record *r)
{
    cairn__hole h;
    cairn__err e;
    return cairn__hole_decode(r->json, r->json_len, r->seq, &h, &e) == CAIRN_OK ? h.upto : 0;
}

static uint64_t hole_upto_of(const trec *t)
{
    cairn_record r;
    memset(&r, 0, sizeof r);
    r.seq = t->seq;
    r.json = t->json;
    r.json_len = t->json_len;
    return hole_upto(&r);
}

static int same_history(cairn_db *db)
{
    cairn_range rg = CAIRN_RANGE_INIT;
    cairn_iter *it = NULL;
    cairn_record r;
    size_t i = 0;
    int rc, same = 1;
    rg.seq_to = g_head.seq;
    if (cairn_iter_open(db, &rg, &it) != CAIRN_OK)
        return 0;
    while ((rc = cairn_iter_next(it, &r)) == CAIRN_OK) {
        const trec *t = i < g_nrecs ? &g_recs[i] : NULL;
        if (t == NULL || r.seq != t->seq || r.type != t->type)
            same = 0;
        else if (r.type == CAIRN_REC_COMPACTED)
            same &= hole_upto(&r) == hole_upto_of(t);
        else if (r.ts_ms != t->ts || r.ns_len != t->ns_len || r.json_len != t->json_len ||
                 r.bin_len != t->bin_len || memcmp(r.ns, t->ns, r.ns_len) != 0 ||
                 memcmp(r.json, t->json, r.json_len) != 0 ||
                 (r.bin_len && memcmp(r.bin, t->bin, r.bin_len) != 0))
            same = 0;
        i++;
    }
    cairn_iter_close(it);
    return same && i == g_nrecs;
}

/* The k-th file (modulo) of those whose name ends in ext (NULL: any). */
static tfile *pick(tfile *files, const char *ext, unsigned k)
{
    size_t n = 0, m = 0;
    for (size_t i = 0; i < g_nfiles; i++)
        n += ext == NULL || strstr(files[i].name, ext) != NULL;
    if (n == 0)
        return &files[0];
    k %= (unsigned)n;
    for (size_t i = 0; i < g_nfiles; i++)
        if (ext == NULL || strstr(files[i].name, ext) != NULL) {
            if (m == k)
                return &files[i];
            m++;
        }
    return &files[0];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tfile files[MAX_FILES];
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX];
    cairn_db *db = NULL;
    cairn_verify_report vr;

    if (g_nfiles == 0)
        make_template();
    for (size_t i = 0; i < g_nfiles; i++) {
        files[i] = g_files[i];
        files[i].b = (uint8_t *)dup_bytes(g_files[i].b, g_files[i].len);
    }
    for (size_t p = 0; p + 8 <= size && p < 8 * 8; p += 8) {
        unsigned op = data[p] % 6;
        tfile *f = pick(files, op == 1 ? ".log" : op == 2 ? ".seg" : NULL, data[p + 1]);
        tfile *g = &files[data[p + 7] % g_nfiles];
        uint32_t off = get_le32(data + p + 2);
        uint16_t val = get_le16(data + p + 6);
        if (f->b == NULL)
            continue;
        switch (op) {
        case 0:
            if (f->len)
                f->b[off % f->len] ^= (uint8_t)(val | 1);
            break;
        case 1:
            forge_log(f->b, f->len, off, val);
            break;
        case 2:
            if (f->len >= 8 && memcmp(f->b, "CAIRNSEG", 8) == 0)
                forge_sealed(f, off, val);
            break;
        case 3:
            f->len = f->len ? off % f->len : 0;
            break;
        case 4:
            free(f->b);
            f->b = NULL;
            break;
        case 5:
            if (g->b != NULL && g != f) {
                uint8_t *tb = f->b;
                size_t tl = f->len;
                f->b = g->b;
                f->len = g->len;
                g->b = tb;
                g->len = tl;
            }
            break;
        }
    }
    write_copy(files, g_nfiles);
    o.read_only = 1;
    if (cairn_open(&db, g_work, &o, err, sizeof err) == CAIRN_OK) {
        if (cairn_verify_head(db, &g_head, NULL, NULL, &vr) == CAIRN_OK && vr.head_proven)
            FUZZ_CHECK(same_history(db));
        cairn_close(db);
    }
    for (size_t i = 0; i < g_nfiles; i++)
        free(files[i].b);
    return 0;
}
