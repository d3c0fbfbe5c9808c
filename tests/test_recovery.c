/*
 * test_recovery.c - what a crash or a damaged file leaves behind, and what
 * the engine makes of it (format-spec/segment.md, sealed.md, manifest.md,
 * "Recovery rules").
 *
 *  - A torn tail of the active segment, cut at every byte offset of its last
 *    4 KiB: a writer open keeps exactly the records that end at or before
 *    the cut, truncates the rest, and appending continues with the next
 *    sequence number and survives another reopen.
 *    Also around the scanner's 1 MiB read chunks, with records larger than
 *    a chunk (and such records read back from log and sealed form).
 *  - Garbage, zeros and a flipped bit in the tail record: detected
 *    (cairn_verify with no writer live), truncated by the writer, nothing
 *    earlier lost.
 *  - Damage with valid records after it in the active segment: readers get
 *    an error; the writer keeps the records before it, moves the rest to a
 *    .damaged file and never gives their sequence numbers again (also when
 *    the open that moved them fails afterwards).
 *  - A flipped bit in a block of a sealed segment: cairn_verify names the
 *    file and the block's offset; records in other blocks and segments stay
 *    readable; the damaged block's records read as CAIRN_ECHECKSUM /
 *    CAIRN_ECORRUPT, never a crash.
 *    Damage to a sealed file's header, index or footer fails the open.
 *  - A corrupt MANIFEST: open fails with CAIRN_ECHECKSUM / CAIRN_ECORRUPT
 *    (CAIRN_EVERSION for a newer one), never creates a new store, never
 *    deletes or changes a file.
 *  - Crashes around a seal (temp files, a .seg not yet in the MANIFEST, a
 *    .log not yet unlinked) recover to exactly one sealed copy; a closed
 *    segment that rotted before its seal is reported, not sealed short.
 *
 * Stores are built through the public API; files are then copied, cut and
 * flipped with plain file I/O. Internals are used only to locate blocks in a
 * sealed file and to craft states a crash leaves (a closed segment).
 *
 * Speed: the torn-tail sweep alone reopens a store ~8000 times, each with a
 * truncate + fsync and a close + fdatasync. What is tested here is which
 * bytes the engine keeps, not whether the disk honours fsync (test_faults
 * injects failed and torn I/O for that), so the stores live on tmpfs when
 * there is one: $CAIRN_RECOVERY_TMPDIR, else /dev/shm if writable, else
 * $TMPDIR or /tmp. On a busy disk the fsyncs otherwise cost a minute.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "bytes.h"
#include "cairn.h"
#include "cairn_sys.h"
#include "filehdr.h"
#include "logseg.h"
#include "manifest.h"
#include "sealed.h"
#include "testutil.h"

#define LOG_HDR 64u
#define REC_OVER 40u

/* ------------------------------------------------------------------------
 * Records the tests append, and what they expect to read back.
 * ---------------------------------------------------------------------- */

typedef struct exp_rec {
    uint64_t seq;
    int64_t ts;
    uint16_t type;
    char ns[32];
    size_t ns_len;
    char json[1200];
    size_t json_len;
    uint8_t bin[32];
    size_t bin_len;
    uint64_t end; /* offset just past the record in its .log (active segment only) */
} exp_rec;

typedef struct model {
    exp_rec *r;
    size_t n, cap;
} model;

static void model_free(model *m)
{
    free(m->r);
    memset(m, 0, sizeof *m);
}

/* Entry k: varied type, namespace, payload length (pad bytes) and trailer. */
static void make_entry(unsigned k, size_t pad, exp_rec *x, cairn_entry *e)
{
    memset(x, 0, sizeof *x);
    x->type = k % 5 == 4 ? (uint16_t)(0x8000u + k % 3) : CAIRN_REC_EVENT;
    x->ns_len = k % 3 == 0 ? 0 : (size_t)snprintf(x->ns, sizeof x->ns, "agent/%u", k % 7);
    x->json_len = (size_t)snprintf(x->json, sizeof x->json, "{\"k\":%u,\"pad\":\"", k);
    for (size_t i = 0; i < pad && x->json_len + 3 < sizeof x->json; i++)
        x->json[x->json_len++] = (char)('a' + (k + i) % 26);
    x->json_len += (size_t)snprintf(x->json + x->json_len, sizeof x->json - x->json_len, "\"}");
    x->bin_len = k % 4 == 1 ? 4 + k % 17 : 0;
    for (size_t i = 0; i < x->bin_len; i++)
        x->bin[i] = (uint8_t)(k * 31 + i);
    e->type = x->type;
    e->ns = x->ns;
    e->ns_len = x->ns_len;
    e->json = x->json;
    e->json_len = x->json_len;
    e->bin = x->bin_len ? x->bin : NULL;
    e->bin_len = x->bin_len;
}

static size_t rec_size(const exp_rec *x)
{
    return REC_OVER + x->ns_len + x->json_len + x->bin_len;
}

/* Append entry k (pad bytes of payload) and record it in the model. */
static void append_one(cairn_db *db, model *m, unsigned k, size_t pad)
{
    exp_rec x;
    cairn_entry e;
    uint64_t seq = 0;
    make_entry(k, pad, &x, &e);
    assert_int_equal(cairn_append(db, &e, &seq), CAIRN_OK);
    x.seq = seq;
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->r = realloc(m->r, m->cap * sizeof *m->r);
        assert_non_null(m->r);
    }
    if (m->n > 0)
        assert_int_equal(seq, m->r[m->n - 1].seq + 1);
    m->r[m->n++] = x;
}

static cairn_db *open_store_bg(const char *dir, int create, int read_only, int background)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX];
    int rc;
    o.create = create;
    o.read_only = read_only;
    o.background = background;
    o.durability = CAIRN_DURABILITY_NONE;
    rc = cairn_open(&db, dir, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        fail_msg("cairn_open(%s): %s: %s", dir, cairn_strerror(rc), err);
    return db;
}

static cairn_db *open_store(const char *dir, int create, int read_only)
{
    return open_store_bg(dir, create, read_only, 0);
}

static int try_open(const char *dir, int create, int read_only, char *err, size_t errlen)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    int rc;
    o.create = create;
    o.read_only = read_only;
    o.background = 0;
    rc = cairn_open(&db, dir, &o, err, errlen);
    if (rc == CAIRN_OK)
        cairn_close(db);
    else
        assert_null(db);
    return rc;
}

/* Read back every record's timestamp (the engine chose them) and check the
 * log holds exactly the model. */
static void model_load_ts(cairn_db *db, model *m)
{
    cairn_iter *it;
    cairn_record r;
    size_t i = 0;
    assert_int_equal(cairn_iter_open(db, NULL, &it), CAIRN_OK);
    while (cairn_iter_next(it, &r) == CAIRN_OK) {
        assert_true(i < m->n);
        assert_int_equal(r.seq, m->r[i].seq);
        m->r[i].ts = r.ts_ms;
        i++;
    }
    assert_int_equal(i, m->n);
    cairn_iter_close(it);
}

static void assert_rec_equal(const cairn_record *r, const exp_rec *x)
{
    assert_int_equal(r->seq, x->seq);
    assert_int_equal(r->ts_ms, x->ts);
    assert_int_equal(r->type, x->type);
    assert_int_equal(r->ns_len, x->ns_len);
    if (x->ns_len)
        assert_memory_equal(r->ns, x->ns, x->ns_len);
    assert_int_equal(r->json_len, x->json_len);
    assert_memory_equal(r->json, x->json, x->json_len);
    assert_int_equal(r->bin_len, x->bin_len);
    if (x->bin_len)
        assert_memory_equal(r->bin, x->bin, x->bin_len);
}

/* The store holds exactly m->r[0..n) (with seq_from = the first one
 * checked) and nothing after them. */
static void assert_records(cairn_db *db, const model *m, size_t from, size_t n)
{
    cairn_range range = CAIRN_RANGE_INIT;
    cairn_iter *it;
    cairn_record r;
    size_t i = from;
    int rc;
    if (from < m->n)
        range.seq_from = m->r[from].seq;
    assert_int_equal(cairn_iter_open(db, from < m->n ? &range : NULL, &it), CAIRN_OK);
    while ((rc = cairn_iter_next(it, &r)) == CAIRN_OK) {
        if (i >= n)
            fail_msg("record %llu survived, expected only %zu records",
                     (unsigned long long)r.seq, n);
        assert_rec_equal(&r, &m->r[i]);
        i++;
    }
    assert_int_equal(rc, CAIRN_ENOTFOUND);
    assert_int_equal(i, n);
    cairn_iter_close(it);
}

static int is_damage_code(int rc)
{
    return rc == CAIRN_ECHECKSUM || rc == CAIRN_ECORRUPT;
}

/* ------------------------------------------------------------------------
 * Store images: the files of a store held in memory, written back to a
 * directory as many times as a test needs.
 * ---------------------------------------------------------------------- */

typedef struct file_img {
    char name[64];
    uint8_t *data;
    size_t len;
} file_img;

typedef struct store_img {
    file_img f[16];
    size_t n;
} store_img;

static void img_load(store_img *img, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    memset(img, 0, sizeof *img);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        char *p;
        struct stat st;
        if (de->d_name[0] == '.' || strcmp(de->d_name, "LOCK") == 0)
            continue;
        p = tu_join(dir, de->d_name);
        assert_int_equal(stat(p, &st), 0);
        if (S_ISREG(st.st_mode)) {
            file_img *f = &img->f[img->n++];
            assert_true(img->n <= sizeof img->f / sizeof img->f[0]);
            assert_true(strlen(de->d_name) < sizeof f->name);
            strcpy(f->name, de->d_name);
            f->data = tu_read_file(p, &f->len);
            assert_non_null(f->data);
        }
        free(p);
    }
    closedir(d);
}

static void img_free(store_img *img)
{
    for (size_t i = 0; i < img->n; i++)
        free(img->f[i].data);
    img->n = 0;
}

static file_img *img_file(store_img *img, const char *ext)
{
    file_img *best = NULL;
    size_t el = strlen(ext);
    for (size_t i = 0; i < img->n; i++) {
        size_t n = strlen(img->f[i].name);
        if (n >= el && strcmp(img->f[i].name + n - el, ext) == 0 &&
            (best == NULL || strcmp(img->f[i].name, best->name) > 0))
            best = &img->f[i];
    }
    assert_non_null(best);
    return best;
}

static int file_exists(const char *dir, const char *name)
{
    char *p = tu_join(dir, name);
    int ok = access(p, F_OK) == 0;
    free(p);
    return ok;
}

static void write_file(const char *dir, const char *name, const void *b, size_t len)
{
    char *p = tu_join(dir, name);
    assert_int_equal(tu_write_file(p, b, len), 0);
    free(p);
}

/* A fresh directory holding the image. */
static char *img_materialize(const store_img *img, const char *tag)
{
    char *dir = tu_mkdtemp(tag);
    assert_non_null(dir);
    for (size_t i = 0; i < img->n; i++)
        write_file(dir, img->f[i].name, img->f[i].data, img->f[i].len);
    return dir;
}

/* Every file of img is in dir with the same bytes, and dir holds nothing
 * else but LOCK. */
static void assert_dir_is_img(const char *dir, const store_img *img)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t seen = 0;
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, "LOCK") == 0)
            continue;
        seen++;
        for (size_t i = 0; i <= img->n; i++) {
            if (i == img->n)
                fail_msg("%s/%s appeared", dir, de->d_name);
            if (strcmp(img->f[i].name, de->d_name) == 0) {
                char *p = tu_join(dir, de->d_name);
                size_t len;
                uint8_t *b = tu_read_file(p, &len);
                assert_non_null(b);
                if (len != img->f[i].len || memcmp(b, img->f[i].data, len) != 0)
                    fail_msg("%s changed", p);
                free(b);
                free(p);
                break;
            }
        }
    }
    closedir(d);
    assert_int_equal(seen, img->n);
}

/* ------------------------------------------------------------------------
 * A store with a sealed segment and an active one whose records span more
 * than `active_bytes`; the model's `end` offsets are those of the active
 * segment's records. *active_first = index of the first active record.
 * ---------------------------------------------------------------------- */
static char *build_store(model *m, size_t active_bytes, size_t *active_first)
{
    char *dir = tu_mkdtemp("recovery");
    cairn_db *db;
    uint64_t end = LOG_HDR;
    unsigned k = 0;

    assert_non_null(dir);
    memset(m, 0, sizeof *m);
    db = open_store(dir, 1, 0);
    for (; k < 12; k++)
        append_one(db, m, k, (k * 53) % 300);
    assert_int_equal(cairn_roll(db), CAIRN_OK); /* seals inline: background = 0 */
    *active_first = m->n;
    while (end - LOG_HDR <= active_bytes) {
        append_one(db, m, k, (k * 53) % 300);
        end += rec_size(&m->r[m->n - 1]);
        m->r[m->n - 1].end = end;
        k++;
    }
    model_load_ts(db, m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    return dir;
}

/* ------------------------------------------------------------------------
 * (a) a torn tail, cut at every offset of the last 4 KiB.
 * ---------------------------------------------------------------------- */

/* After a writer open of a store whose active .log was cut at `cut`: the
 * records kept are those ending at or before the cut; the file is truncated
 * there; a new append takes the next sequence number and survives a
 * reopen. */
static void check_cut(const char *work, const char *logname, model *m, size_t active_first,
                      uint64_t cut)
{
    cairn_db *db;
    cairn_stats st;
    cairn_record *got;
    size_t kept = active_first;
    uint64_t keep_end = LOG_HDR, seq;
    exp_rec x;
    cairn_entry e;
    char *logpath = tu_join(work, logname);

    while (kept < m->n && m->r[kept].end <= cut)
        keep_end = m->r[kept++].end;

    db = open_store(work, 0, 0);
    assert_int_equal(tu_file_size(logpath), (long long)keep_end);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.records, kept);
    /* A torn tail is truncated, never mistaken for damage and set aside. */
    assert_int_equal(st.recovered_torn_bytes, cut - keep_end);
    assert_int_equal(st.recovered_set_aside_bytes, 0);
    assert_int_equal(st.last_seq, m->r[kept - 1].seq);
    assert_records(db, m, active_first - 1, kept);
    /* Appending continues right after the last kept record. */
    make_entry(9999, 17, &x, &e);
    assert_int_equal(cairn_append(db, &e, &seq), CAIRN_OK);
    assert_int_equal(seq, m->r[kept - 1].seq + 1);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_int_equal(tu_file_size(logpath), (long long)(keep_end + rec_size(&x)));

    db = open_store(work, 0, 0);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.records, kept + 1);
    assert_int_equal(st.last_seq, seq);
    assert_int_equal(cairn_get(db, seq, &got), CAIRN_OK);
    assert_int_equal(got->json_len, x.json_len);
    assert_memory_equal(got->json, x.json, x.json_len);
    assert_true(got->ts_ms >= m->r[kept - 1].ts);
    cairn_record_free(db, got);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    free(logpath);
}

static void test_torn_tail_keeps_exactly_the_whole_records(void **state)
{
    model m;
    size_t active_first;
    char *dir = build_store(&m, 4096 + 600, &active_first), *work;
    store_img img;
    file_img *log;
    uint64_t size;
    (void)state;

    img_load(&img, dir);
    log = img_file(&img, ".log");
    size = log->len;
    assert_int_equal(size, m.r[m.n - 1].end);
    assert_true(size - 4096 > LOG_HDR);
    work = img_materialize(&img, "torn");
    for (uint64_t cut = size - 4096; cut <= size; cut++) {
        /* Only MANIFEST and the .log change; the sealed file stays. */
        write_file(work, "MANIFEST", img_file(&img, "MANIFEST")->data,
                   img_file(&img, "MANIFEST")->len);
        write_file(work, log->name, log->data, (size_t)cut);
        check_cut(work, log->name, &m, active_first, cut);
    }
    tu_rmrf(work);
    free(work);
    img_free(&img);
    tu_rmrf(dir);
    free(dir);
    model_free(&m);
}

/* Records larger than the scanner's read chunk (1 MiB), and a tail torn
 * at and around chunk boundaries: the scan must re-read across them. */
static char *big_json(unsigned k, size_t len)
{
    char *j = malloc(len);
    assert_non_null(j);
    memset(j, 'a' + (int)(k % 26), len);
    j[0] = '"';
    j[len - 1] = '"';
    for (size_t i = 1; i + 1 < len; i += 4093)
        j[i] = (char)('A' + (k + i) % 26);
    return j;
}

static void test_torn_tail_across_scan_chunks(void **state)
{
    static const size_t sizes[] = {300000, 300000, 300000, 1500000, 200000, 200000, 5000, 700};
    enum { N = sizeof sizes / sizeof sizes[0] };
    uint64_t ends[N], seqs[N], cuts[64];
    size_t ncut = 0;
    char *dir = tu_mkdtemp("bigtail"), *work;
    cairn_db *db;
    store_img img;
    file_img *log;
    uint64_t end = LOG_HDR;
    (void)state;

    assert_non_null(dir);
    db = open_store(dir, 1, 0);
    for (unsigned k = 0; k < N; k++) {
        char *j = big_json(k, sizes[k]);
        cairn_entry e = {CAIRN_REC_EVENT, "big", 3, j, sizes[k], NULL, 0};
        assert_int_equal(cairn_append(db, &e, &seqs[k]), CAIRN_OK);
        end += REC_OVER + 3 + sizes[k];
        ends[k] = end;
        free(j);
    }
    assert_int_equal(cairn_close(db), CAIRN_OK);
    img_load(&img, dir);
    log = img_file(&img, ".log");
    assert_int_equal(log->len, end);

    for (unsigned k = 0; k < N; k++) {
        cuts[ncut++] = ends[k] - 1;
        cuts[ncut++] = ends[k];
        if (ends[k] + 3 < end)
            cuts[ncut++] = ends[k] + 3;
    }
    for (uint64_t chunk = 1u << 20; chunk < end; chunk += 1u << 20)
        for (int d = -2; d <= 5; d++)
            if (ncut < sizeof cuts / sizeof cuts[0])
                cuts[ncut++] = LOG_HDR + chunk + (uint64_t)(int64_t)d;

    work = img_materialize(&img, "bigtail");
    for (size_t c = 0; c < ncut; c++) {
        uint64_t cut = cuts[c], keep_end = LOG_HDR, seq;
        size_t kept = 0;
        char *path = tu_join(work, log->name);
        cairn_stats st;
        cairn_entry e = {CAIRN_REC_EVENT, NULL, 0, "{}", 2, NULL, 0};

        while (kept < N && ends[kept] <= cut)
            keep_end = ends[kept++];
        write_file(work, "MANIFEST", img_file(&img, "MANIFEST")->data,
                   img_file(&img, "MANIFEST")->len);
        write_file(work, log->name, log->data, (size_t)cut);
        db = open_store(work, 0, 0);
        assert_int_equal(tu_file_size(path), (long long)keep_end);
        assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
        assert_int_equal(st.records, kept);
        if (kept > 0)
            assert_int_equal(st.last_seq, seqs[kept - 1]);
        assert_int_equal(cairn_append(db, &e, &seq), CAIRN_OK);
        assert_int_equal(seq, kept + 1);
        assert_int_equal(cairn_close(db), CAIRN_OK);
        db = open_store(work, 0, 1);
        assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
        assert_int_equal(st.records, kept + 1);
        assert_int_equal(cairn_close(db), CAIRN_OK);
        free(path);
    }
    tu_rmrf(work);
    free(work);
    img_free(&img);
    tu_rmrf(dir);
    free(dir);
}

/* The records of the test above read back, from the active segment (log
 * form, read in chunks of 256 KiB) and after a roll from a sealed one. */
static void check_big_records(cairn_db *db, const size_t *sizes, const uint64_t *seqs, size_t n)
{
    cairn_iter *it;
    cairn_record rec, *r;
    size_t i = 0;
    int rc;

    for (size_t k = 0; k < n; k++) {
        char *j = big_json((unsigned)k, sizes[k]);
        rc = cairn_get(db, seqs[k], &r);
        if (rc != CAIRN_OK)
            fail_msg("cairn_get(%llu) of a %zu-byte record: %s (%s)", (unsigned long long)seqs[k],
                     sizes[k], cairn_strerror(rc), cairn_errmsg(db));
        assert_int_equal(r->json_len, sizes[k]);
        assert_memory_equal(r->json, j, sizes[k]);
        cairn_record_free(db, r);
        free(j);
    }
    assert_int_equal(cairn_iter_open(db, NULL, &it), CAIRN_OK);
    while ((rc = cairn_iter_next(it, &rec)) == CAIRN_OK) {
        assert_true(i < n);
        assert_int_equal(rec.seq, seqs[i]);
        assert_int_equal(rec.json_len, sizes[i]);
        i++;
    }
    if (rc != CAIRN_ENOTFOUND)
        fail_msg("iteration stopped after %zu records: %s (%s)", i, cairn_strerror(rc),
                 cairn_errmsg(db));
    assert_int_equal(i, n);
    cairn_iter_close(it);
}

static void test_records_larger_than_the_read_chunk_read_back(void **state)
{
    static const size_t sizes[] = {1000, 300000, 700, 1500000, 262144, 262145, 500};
    enum { N = sizeof sizes / sizeof sizes[0] };
    uint64_t seqs[N];
    char *dir = tu_mkdtemp("bigread");
    cairn_db *db;
    (void)state;

    assert_non_null(dir);
    db = open_store(dir, 1, 0);
    for (unsigned k = 0; k < N; k++) {
        char *j = big_json(k, sizes[k]);
        cairn_entry e = {CAIRN_REC_EVENT, "big", 3, j, sizes[k], NULL, 0};
        assert_int_equal(cairn_append(db, &e, &seqs[k]), CAIRN_OK);
        free(j);
    }
    check_big_records(db, sizes, seqs, N); /* active segment, this handle */
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_store(dir, 0, 1);
    check_big_records(db, sizes, seqs, N); /* active segment, a reader */
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_store(dir, 0, 0);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    check_big_records(db, sizes, seqs, N); /* sealed */
    assert_int_equal(cairn_close(db), CAIRN_OK);
    tu_rmrf(dir);
    free(dir);
}

/* ------------------------------------------------------------------------
 * (b) garbage, zeros, a flipped bit in the tail record.
 * ---------------------------------------------------------------------- */

typedef struct problems {
    int n;
    char file[8][64];
    uint64_t off[8];
    int code[8];
} problems;

static void on_problem(void *user, const char *file, uint64_t offset, int code,
                       const char *message)
{
    problems *p = user;
    (void)message;
    if (p->n < 8) {
        snprintf(p->file[p->n], sizeof p->file[0], "%s", file);
        p->off[p->n] = offset;
        p->code[p->n] = code;
    }
    p->n++;
}

static void verify_store(const char *dir, problems *p)
{
    cairn_db *db = open_store(dir, 0, 1);
    uint64_t count = 0;
    memset(p, 0, sizeof *p);
    assert_int_equal(cairn_verify(db, on_problem, p, &count), CAIRN_OK);
    assert_int_equal(count, (uint64_t)p->n);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

/* The image with its .log replaced by `log`: verify (no writer) reports
 * the tail at `keep_end`, a writer open truncates it to there, and the
 * store then holds exactly the first `kept` records and takes appends. */
static void check_damaged_tail(const store_img *img, const file_img *orig_log, const uint8_t *log,
                               size_t len, model *m, size_t kept, uint64_t keep_end)
{
    char *work = img_materialize(img, "tail"), *path;
    problems p;
    cairn_db *db;
    cairn_stats st;
    exp_rec x;
    cairn_entry e;
    uint64_t seq;

    write_file(work, orig_log->name, log, len);
    verify_store(work, &p);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.file[0], orig_log->name);
    assert_int_equal(p.off[0], keep_end);
    assert_true(p.code[0] == CAIRN_ECORRUPT || p.code[0] == CAIRN_ECHECKSUM);

    db = open_store(work, 0, 0);
    path = tu_join(work, orig_log->name);
    assert_int_equal(tu_file_size(path), (long long)keep_end);
    assert_records(db, m, 0, kept);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.records, kept);
    assert_int_equal(st.recovered_torn_bytes, len - keep_end);
    assert_int_equal(st.recovered_set_aside_bytes, 0);
    make_entry(7777, 3, &x, &e);
    assert_int_equal(cairn_append(db, &e, &seq), CAIRN_OK);
    assert_int_equal(seq, m->r[kept - 1].seq + 1);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    verify_store(work, &p);
    assert_int_equal(p.n, 0);
    free(path);
    tu_rmrf(work);
    free(work);
}

static void test_garbage_and_zeros_after_the_tail_are_truncated(void **state)
{
    model m;
    size_t active_first;
    char *dir = build_store(&m, 2000, &active_first);
    store_img img;
    file_img *log;
    uint8_t *buf;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    (void)state;

    img_load(&img, dir);
    log = img_file(&img, ".log");
    buf = malloc(log->len + 8192);
    assert_non_null(buf);
    memcpy(buf, log->data, log->len);

    /* Garbage (xorshift bytes), of several lengths, some shorter than a length field. */
    for (size_t glen = 1; glen <= 4096; glen = glen * 3 + 1) {
        for (size_t i = 0; i < glen; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[log->len + i] = (uint8_t)x;
        }
        check_damaged_tail(&img, log, buf, log->len + glen, &m, m.n, log->len);
    }
    /* A run of zeros (a preallocated or never-written extent). */
    memset(buf + log->len, 0, 8192);
    check_damaged_tail(&img, log, buf, log->len + 8192, &m, m.n, log->len);
    /* Zeros, then a plausible record start (a hole before a later write). */
    memcpy(buf + log->len + 4096, log->data + LOG_HDR, 64);
    check_damaged_tail(&img, log, buf, log->len + 4096 + 64, &m, m.n, log->len);
    /* The last record zeroed out where it lies (the file grew, its data never landed). */
    memcpy(buf, log->data, log->len);
    memset(buf + m.r[m.n - 2].end, 0, log->len - m.r[m.n - 2].end);
    check_damaged_tail(&img, log, buf, log->len, &m, m.n - 1, m.r[m.n - 2].end);

    free(buf);
    img_free(&img);
    tu_rmrf(dir);
    free(dir);
    model_free(&m);
}

static void test_flipped_bit_in_tail_record_drops_only_that_record(void **state)
{
    model m;
    size_t active_first;
    char *dir = build_store(&m, 1500, &active_first);
    store_img img;
    file_img *log;
    uint8_t *buf;
    uint64_t start;
    (void)state;

    img_load(&img, dir);
    log = img_file(&img, ".log");
    start = m.r[m.n - 2].end;
    buf = malloc(log->len);
    assert_non_null(buf);
    /* One flipped bit at every byte of the last record, cycling the bit. */
    for (uint64_t off = start; off < log->len; off++) {
        memcpy(buf, log->data, log->len);
        buf[off] ^= (uint8_t)(1u << (off % 8));
        check_damaged_tail(&img, log, buf, log->len, &m, m.n - 1, start);
    }
    free(buf);
    img_free(&img);
    tu_rmrf(dir);
    free(dir);
    model_free(&m);
}

/* Damage in the middle of the active segment, with valid records after
 * it (bit rot; or a power loss that kept later pages of a write but not
 * earlier ones). A reader reports it; a writer keeps the records before
 * it, moves the rest aside to <id>-<offset>.damaged instead of destroying
 * it, and never hands out the numbers of the records it moved. */
/* bad: index in the model of the first damaged record, in the active
 * segment, whose first record is active_first. */
static void check_set_aside(store_img *img, model *m, size_t active_first, size_t bad)
{
    char *work, *path, dname[64];
    file_img *log = img_file(img, ".log");
    problems p;
    cairn_db *db;
    cairn_iter *it;
    cairn_record rec, *r = NULL;
    cairn_stats st;
    uint64_t off = bad == active_first ? LOG_HDR : m->r[bad - 1].end;
    uint64_t seq, last_seq = m->r[m->n - 1].seq;
    uint8_t *b;
    size_t blen, i = 0, n_before = m->n;
    int rc, errors = 0;

    log->data[off + 40] ^= 0x02; /* in its namespace/payload: a checksum mismatch */
    work = img_materialize(img, "midbad");

    /* Before any writer: verify names the offset; readers see an error, not
     * a quietly shorter log. */
    verify_store(work, &p);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.file[0], log->name);
    assert_int_equal(p.off[0], off);
    assert_int_equal(p.code[0], CAIRN_ECHECKSUM);
    db = open_store(work, 0, 1);
    assert_int_equal(cairn_iter_open(db, NULL, &it), CAIRN_OK);
    while ((rc = cairn_iter_next(it, &rec)) != CAIRN_ENOTFOUND) {
        if (rc != CAIRN_OK) {
            assert_true(is_damage_code(rc));
            assert_int_equal(i, bad);
            errors++;
            break;
        }
        assert_rec_equal(&rec, &m->r[i]);
        i++;
    }
    cairn_iter_close(it);
    assert_int_equal(errors, 1);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_dir_is_img(work, img);

    /* The writer sets the bytes aside, truncates, and moves past their numbers. */
    db = open_store(work, 0, 0);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.recovered_set_aside_bytes, log->len - off);
    assert_int_equal(st.recovered_torn_bytes, 0);
    assert_int_equal(st.records, bad);
    snprintf(dname, sizeof dname, "%.16s-%016llx.damaged", log->name, (unsigned long long)off);
    path = tu_join(work, dname);
    b = tu_read_file(path, &blen);
    if (b == NULL)
        fail_msg("no %s", dname);
    assert_int_equal(blen, log->len - off);
    assert_memory_equal(b, log->data + off, blen);
    free(b);
    free(path);
    assert_records(db, m, 0, bad);
    for (size_t j = bad; j < m->n; j++) {
        assert_int_equal(cairn_get(db, m->r[j].seq, &r), CAIRN_ENOTFOUND);
        assert_null(r);
    }
    append_one(db, m, 5555, 11);
    seq = m->r[m->n - 1].seq;
    assert_true(seq > last_seq); /* the set-aside numbers are never given again */
    assert_int_equal(cairn_close(db), CAIRN_OK);

    /* It stays that way across reopens; verify reports the set-aside file. */
    db = open_store(work, 0, 0);
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.records, bad + 1);
    assert_int_equal(st.last_seq, seq);
    assert_int_equal(st.recovered_set_aside_bytes, 0);
    append_one(db, m, 5556, 12);
    assert_int_equal(m->r[m->n - 1].seq, seq + 1);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_true(file_exists(work, dname));
    verify_store(work, &p);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.file[0], dname);
    tu_rmrf(work);
    free(work);

    /* A reader asking for one of the records after the damage, before any
     * writer recovered the store, is told of the damage: the record exists
     * (valid, checksummed), it just cannot be reached. */
    work = img_materialize(img, "midbadget");
    db = open_store(work, 0, 1);
    rc = cairn_get(db, m->r[bad + 1 < n_before ? bad + 1 : bad].seq, &r);
    if (!is_damage_code(rc))
        fail_msg("reader: cairn_get(%llu), a valid record after the damage, returned %d (%s)",
                 (unsigned long long)m->r[bad + 1 < n_before ? bad + 1 : bad].seq, rc,
                 cairn_errmsg(db));
    assert_int_equal(cairn_close(db), CAIRN_OK);
    tu_rmrf(work);
    free(work);

    log->data[off + 40] ^= 0x02;
    m->n = n_before;
}

static void test_damage_before_valid_records_is_set_aside_not_truncated(void **state)
{
    model m;
    size_t active_first;
    char *dir = build_store(&m, 3000, &active_first);
    store_img img;
    (void)state;

    img_load(&img, dir);
    /* Damage in the first record of the active segment (the segment ends up
     * empty: it is closed with no record and a new one starts past the set-
     * aside numbers), and in the middle. */
    check_set_aside(&img, &m, active_first, active_first);
    check_set_aside(&img, &m, active_first, active_first + (m.n - active_first) / 2);
    img_free(&img);
    tu_rmrf(dir);
    free(dir);
    model_free(&m);
}

/* An I/O table that fails creating a new segment (ENOSPC) while armed. */
static int fail_segment_create;

static int failing_openat(void *user, const char *site, int dirfd, const char *path, int flags,
                          int mode)
{
    const cairn_io *real = cairn_io_default();
    (void)user;
    if (fail_segment_create && strcmp(site, "segment.create") == 0) {
        errno = ENOSPC;
        return -1;
    }
    return real->openat(real->user, site, dirfd, path, flags, mode);
}

/* The numbers of set-aside records stay retired even when the open that set
 * them aside fails after truncating (here: no space for the new segment it
 * rolls to). Otherwise the next open sees a clean, shorter segment and hands
 * those numbers out again, to records that are not the ones in the
 * .damaged file. */
static void test_set_aside_numbers_stay_retired_after_a_failed_open(void **state)
{
    model m;
    size_t active_first, bad;
    char *dir = build_store(&m, 3000, &active_first), *work;
    store_img img;
    file_img *log;
    cairn_io io = *cairn_io_default();
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    char err[CAIRN_ERRMSG_MAX];
    uint64_t off, last_seq, seq = 0;
    cairn_entry e = {CAIRN_REC_EVENT, NULL, 0, "{}", 2, NULL, 0};
    int rc;
    (void)state;

    img_load(&img, dir);
    log = img_file(&img, ".log");
    bad = active_first + (m.n - active_first) / 2;
    off = m.r[bad - 1].end;
    last_seq = m.r[m.n - 1].seq;
    log->data[off + 40] ^= 0x02;
    work = img_materialize(&img, "retired");

    io.openat = failing_openat;
    o.io = &io;
    o.background = 0;
    fail_segment_create = 1;
    rc = cairn_open(&db, work, &o, err, sizeof err);
    fail_segment_create = 0;
    if (rc == CAIRN_OK) {
        /* The engine may also keep going in the damaged segment; then the
         * numbers must still be skipped. */
        assert_int_equal(cairn_append(db, &e, &seq), CAIRN_OK);
        assert_true(seq > last_seq);
        assert_int_equal(cairn_close(db), CAIRN_OK);
    } else {
        assert_int_equal(rc, CAIRN_EFULL);
    }
    db = open_store(work, 0, 0);
    assert_int_equal(cairn_append(db, &e, &seq), CAIRN_OK);
    if (seq <= last_seq)
        fail_msg("after a failed recovery open, a new record got seq %llu: records %llu..%llu "
                 "were set aside with those numbers and must never be numbered again",
                 (unsigned long long)seq, (unsigned long long)m.r[bad].seq,
                 (unsigned long long)last_seq);
    assert_int_equal(cairn_close(db), CAIRN_OK);

    tu_rmrf(work);
    free(work);
    img_free(&img);
    tu_rmrf(dir);
    free(dir);
    model_free(&m);
}

/* ------------------------------------------------------------------------
 * (c) a flipped bit inside a block of a sealed segment.
 * ---------------------------------------------------------------------- */

/* A store: segment 1 sealed with >= 3 blocks, segment 2 sealed, segment 3
 * active. seg_first[i] = index in the model of segment i+1's first record. */
static char *build_sealed_store(model *m, size_t seg_first[3])
{
    char *dir = tu_mkdtemp("sealed");
    cairn_db *db;
    unsigned k = 0;

    assert_non_null(dir);
    memset(m, 0, sizeof *m);
    db = open_store(dir, 1, 0);
    seg_first[0] = 0;
    for (; k < 170; k++) /* ~1.1 KiB each: about 190 KiB raw, 3 blocks of 64 KiB */
        append_one(db, m, k, 1000 + k % 50);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    seg_first[1] = m->n;
    for (; k < 180; k++)
        append_one(db, m, k, k % 90);
    assert_int_equal(cairn_roll(db), CAIRN_OK);
    seg_first[2] = m->n;
    for (; k < 190; k++)
        append_one(db, m, k, k % 90);
    model_load_ts(db, m);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    return dir;
}

static void check_get(cairn_db *db, const exp_rec *x)
{
    cairn_record *r;
    assert_int_equal(cairn_get(db, x->seq, &r), CAIRN_OK);
    assert_rec_equal(r, x);
    cairn_record_free(db, r);
}

static void check_damaged_block_store(const char *work, const model *m, const size_t seg_first[3],
                                      size_t bad_from, size_t bad_to, int read_only)
{
    cairn_db *db = open_store(work, 0, read_only);
    cairn_record *r = NULL, rec;
    cairn_iter *it;
    size_t i = 0, errors = 0;
    int rc;

    /* Every record outside the damaged block reads back; inside it, an error. */
    for (size_t j = 0; j < m->n; j++) {
        if (j >= bad_from && j < bad_to) {
            rc = cairn_get(db, m->r[j].seq, &r);
            assert_true(is_damage_code(rc));
            assert_null(r);
            assert_non_null(strstr(cairn_errmsg(db), "0000000000000001.seg"));
        } else {
            check_get(db, &m->r[j]);
        }
    }
    /* Iteration from segment 2 on sees everything there, and a range
     * inside segment 1 that avoids the damaged block too. */
    assert_records(db, m, seg_first[1], m->n);
    assert_records(db, m, bad_to, m->n);
    /* A full iteration reports the block once and goes on past it. */
    assert_int_equal(cairn_iter_open(db, NULL, &it), CAIRN_OK);
    while ((rc = cairn_iter_next(it, &rec)) != CAIRN_ENOTFOUND) {
        if (rc != CAIRN_OK) {
            assert_true(is_damage_code(rc));
            assert_int_equal(i, bad_from);
            errors++;
            i = bad_to;
            continue;
        }
        assert_true(i < m->n);
        assert_rec_equal(&rec, &m->r[i]);
        i++;
    }
    assert_int_equal(errors, 1);
    assert_int_equal(i, m->n);
    cairn_iter_close(it);
    assert_int_equal(cairn_close(db), CAIRN_OK);
}

static void test_flipped_bit_in_sealed_block_costs_only_that_block(void **state)
{
    model m;
    size_t seg_first[3];
    char *dir = build_sealed_store(&m, seg_first), *work;
    store_img img;
    file_img *seg = NULL;
    sealed_seg s;
    sealed_block b;
    cairn__err e;
    problems p;
    size_t bad_from, bad_to;
    (void)state;

    img_load(&img, dir);
    for (size_t i = 0; i < img.n; i++)
        if (strcmp(img.f[i].name, "0000000000000001.seg") == 0)
            seg = &img.f[i];
    assert_non_null(seg);
    assert_int_equal(cairn__sealed_open(seg->data, seg->len, &s, seg->name, &e), CAIRN_OK);
    assert_true(s.block_count >= 3);
    cairn__sealed_block(&s, 1, &b); /* a middle block */
    bad_from = (size_t)(b.first_seq - m.r[0].seq);
    bad_to = (size_t)(b.last_seq - m.r[0].seq + 1);

    /* Flip one bit at the start, the middle and the end of the frame. */
    for (int where = 0; where < 3; where++) {
        uint64_t off = b.offset + (where == 0 ? 0 : where == 1 ? b.comp_len / 2 : b.comp_len - 1);
        seg->data[off] ^= 0x10;
        work = img_materialize(&img, "sealedbit");
        verify_store(work, &p);
        assert_true(p.n >= 1);
        for (int i = 0; i < p.n && i < 8; i++) {
            assert_string_equal(p.file[i], "0000000000000001.seg");
            assert_true(is_damage_code(p.code[i]));
        }
        assert_int_equal(p.off[0], b.offset);
        check_damaged_block_store(work, &m, seg_first, bad_from, bad_to, 0);
        check_damaged_block_store(work, &m, seg_first, bad_from, bad_to, 1);
        /* The writer left every file as it was: damage is reported, not "repaired". */
        assert_dir_is_img(work, &img);
        tu_rmrf(work);
        free(work);
        seg->data[off] ^= 0x10;
    }
    img_free(&img);
    tu_rmrf(dir);
    free(dir);
    model_free(&m);
}

/* A flipped bit in a sealed file's header, index or footer: the file cannot
 * be trusted at all, so the store does not open; nothing is deleted. */
static void test_flipped_bit_in_sealed_metadata_fails_open_cleanly(void **state)
{
    model m;
    size_t seg_first[3];
    char *dir = build_sealed_store(&m, seg_first), *work;
    store_img img;
    file_img *seg = NULL;
    sealed_seg s;
    cairn__err e;
    char err[CAIRN_ERRMSG_MAX];
    (void)state;

    img_load(&img, dir);
    for (size_t i = 0; i < img.n; i++)
        if (strcmp(img.f[i].name, "0000000000000001.seg") == 0)
            seg = &img.f[i];
    assert_non_null(seg);
    assert_int_equal(cairn__sealed_open(seg->data, seg->len, &s, seg->name, &e), CAIRN_OK);
    {
        const uint64_t offs[] = {
            0, 9, 20, 40, 57,                    /* header: magic, version, id, created, sum */
            s.index_off, s.index_off + 70,       /* block index entries 0 and 1 */
            seg->len - SEAL_FOOTER_SIZE + 3,     /* footer magic */
            seg->len - SEAL_FOOTER_SIZE + 10,    /* footer index_offset */
            seg->len - SEAL_FOOTER_SIZE + 66,    /* footer checksum */
        };
        for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
            int rc;
            seg->data[offs[i]] ^= 0x01;
            work = img_materialize(&img, "sealedmeta");
            rc = try_open(work, 0, 0, err, sizeof err);
            if (!is_damage_code(rc))
                fail_msg("flip at %llu: open returned %d (%s)", (unsigned long long)offs[i], rc,
                         err);
            assert_non_null(strstr(err, "0000000000000001.seg"));
            assert_true(is_damage_code(try_open(work, 0, 1, err, sizeof err)));
            assert_dir_is_img(work, &img);
            tu_rmrf(work);
            free(work);
            seg->data[offs[i]] ^= 0x01;
        }
    }
    img_free(&img);
    tu_rmrf(dir);
    free(dir);
    model_free(&m);
}

/* ------------------------------------------------------------------------
 * (d) a corrupt MANIFEST.
 * ---------------------------------------------------------------------- */

static void check_bad_manifest(const store_img *img, const uint8_t *man, size_t len, int present,
                               int want_version)
{
    char *work = img_materialize(img, "badman");
    char err[CAIRN_ERRMSG_MAX];
    store_img expect = *img;
    file_img *mf = NULL;
    int rc;

    for (size_t i = 0; i < expect.n; i++)
        if (strcmp(expect.f[i].name, "MANIFEST") == 0)
            mf = &expect.f[i];
    assert_non_null(mf);
    if (present) {
        write_file(work, "MANIFEST", man, len);
        mf->data = (uint8_t *)(uintptr_t)man;
        mf->len = len;
    } else {
        char *p = tu_join(work, "MANIFEST");
        assert_int_equal(unlink(p), 0);
        free(p);
        *mf = expect.f[--expect.n];
    }
    for (int ro = 0; ro <= 1; ro++) {
        for (int create = 0; create <= 1; create++) {
            rc = try_open(work, create, ro, err, sizeof err);
            if (want_version ? rc != CAIRN_EVERSION : !is_damage_code(rc)) {
                /* No MANIFEST and no create (or read-only): "no store" is right too. */
                if (!(present == 0 && (ro == 1 || create == 0) && rc == CAIRN_ENOTFOUND))
                    fail_msg("open (read_only %d, create %d) returned %d (%s)", ro, create, rc,
                             err);
            }
            assert_dir_is_img(work, &expect);
        }
    }
    tu_rmrf(work);
    free(work);
}

static void test_corrupt_manifest_fails_open_and_touches_nothing(void **state)
{
    model m;
    size_t seg_first[3];
    char *dir = build_sealed_store(&m, seg_first);
    store_img img;
    file_img *man;
    uint8_t *buf;
    (void)state;

    img_load(&img, dir);
    man = img_file(&img, "MANIFEST");
    assert_int_equal(man->len, 64 + 112 + 3 * 88 + 8);
    buf = malloc(man->len + 1);
    assert_non_null(buf);

    /* A flipped bit anywhere: header, every entry, the trailer. */
    for (size_t off = 0; off < man->len; off += 7) {
        memcpy(buf, man->data, man->len);
        buf[off] ^= (uint8_t)(1u << (off % 8));
        check_bad_manifest(&img, buf, man->len, 1, 0);
    }
    /* Cut short, grown by a byte, emptied, replaced by text. */
    check_bad_manifest(&img, man->data, man->len - 1, 1, 0);
    check_bad_manifest(&img, man->data, 63, 1, 0);
    check_bad_manifest(&img, man->data, 0, 1, 0);
    memcpy(buf, man->data, man->len);
    buf[man->len] = 0;
    check_bad_manifest(&img, buf, man->len + 1, 1, 0);
    check_bad_manifest(&img, (const uint8_t *)"not a manifest\n", 15, 1, 0);
    /* Gone: segment files without a manifest are never taken for a new store. */
    check_bad_manifest(&img, NULL, 0, 0, 0);
    /* Whole and checksummed but from a newer format version: CAIRN_EVERSION. */
    memcpy(buf, man->data, man->len);
    put_le16(buf + 8, MAN_VERSION + 1);
    put_le64(buf + 56, XXH3_64bits(buf, 56));
    put_le64(buf + man->len - 8, XXH3_64bits(buf, man->len - 8));
    check_bad_manifest(&img, buf, man->len, 1, 1);

    free(buf);
    img_free(&img);
    tu_rmrf(dir);
    free(dir);
    model_free(&m);
}

/* ------------------------------------------------------------------------
 * (e) a closed segment awaiting its seal, and the crashes around sealing.
 * ---------------------------------------------------------------------- */

/* A store whose one segment holds n records (segment 1, active), then
 * turned by hand into what a roll leaves just before the seal: segment 1
 * CLOSED, an empty active segment 2. The model's `end` offsets are those of
 * segment 1. */
static char *build_closed_store(model *m, unsigned n)
{
    char *dir = tu_mkdtemp("closed");
    const cairn_io *io = cairn_io_default();
    cairn_db *db;
    manifest man;
    manifest_entry *x;
    logseg seg;
    cairn__err e;
    uint64_t end = LOG_HDR;
    int dfd;

    assert_non_null(dir);
    memset(m, 0, sizeof *m);
    db = open_store(dir, 1, 0);
    for (unsigned k = 0; k < n; k++) {
        append_one(db, m, k, (k * 53) % 300);
        end += rec_size(&m->r[m->n - 1]);
        m->r[m->n - 1].end = end;
    }
    model_load_ts(db, m);
    assert_int_equal(cairn_close(db), CAIRN_OK);

    dfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(cairn__manifest_read(io, dfd, NULL, &man, &e), CAIRN_OK);
    assert_int_equal(man.n, 1);
    x = realloc(man.e, 2 * sizeof *x);
    assert_non_null(x);
    man.e = x;
    x[0].kind = SEG_CLOSED;
    x[0].count = m->n;
    x[0].last_seq = m->r[m->n - 1].seq;
    x[0].first_ts = m->r[0].ts;
    x[0].last_ts = m->r[m->n - 1].ts;
    memset(&x[1], 0, sizeof x[1]);
    x[1].id = 2;
    x[1].kind = SEG_ACTIVE;
    x[1].base_seq = m->r[m->n - 1].seq + 1;
    man.n = 2;
    man.next_id = 3;
    man.generation++;
    assert_int_equal(cairn__logseg_create(io, dfd, &seg, 2, 0x5eed5eed5eed5eedull,
                                          x[1].base_seq, m->r[m->n - 1].ts, &e),
                     CAIRN_OK);
    cairn__logseg_free(io, NULL, &seg);
    assert_int_equal(cairn__manifest_write(io, dfd, &man, NULL, &e), CAIRN_OK);
    cairn__manifest_free(NULL, &man);
    close(dfd);
    return dir;
}

static void test_crashes_around_a_seal_recover_to_one_sealed_copy(void **state)
{
    model m;
    char *dir = build_closed_store(&m, 40);
    store_img img;
    cairn_db *db;
    problems p;
    uint64_t seq;
    sealed_seg s;
    cairn__err err;
    uint8_t *seg;
    size_t seglen;
    char *path;
    (void)state;

    img_load(&img, dir);
    /* Crash during the seal: a half-written temp file; crash after the
     * rename but before the manifest swap: a .seg the manifest does not list
     * as sealed (here: garbage). Also a roll that crashed before its manifest
     * swap (segment 3), a manifest temp file, and files that are not cairn's. */
    write_file(dir, "0000000000000001.seg.tmp", "CAIRNSEG", 8);
    write_file(dir, "0000000000000001.seg", "not a sealed segment", 20);
    write_file(dir, "0000000000000003.log", img_file(&img, "0000000000000002.log")->data, 64);
    write_file(dir, "MANIFEST.tmp", "partial", 7);
    write_file(dir, "KEYS.00000000deadbeef.tmp", "CAIRNKEY", 8); /* a KEYS being made */
    write_file(dir, "KEYS.notes.txt", "mine", 4);
    write_file(dir, "notes.txt", "mine", 4);
    write_file(dir, "0000000000000001.LOG", "mine", 4);

    db = open_store(dir, 0, 0); /* background = 0: seals inline */
    assert_false(file_exists(dir, "0000000000000001.seg.tmp"));
    assert_false(file_exists(dir, "0000000000000003.log"));
    assert_false(file_exists(dir, "MANIFEST.tmp"));
    assert_false(file_exists(dir, "KEYS.00000000deadbeef.tmp"));
    assert_true(file_exists(dir, "KEYS.notes.txt"));
    assert_false(file_exists(dir, "0000000000000001.log"));
    assert_true(file_exists(dir, "0000000000000002.log"));
    assert_true(file_exists(dir, "notes.txt"));
    assert_true(file_exists(dir, "0000000000000001.LOG"));
    path = tu_join(dir, "0000000000000001.seg");
    seg = tu_read_file(path, &seglen);
    assert_non_null(seg);
    assert_int_equal(cairn__sealed_open(seg, seglen, &s, "0000000000000001.seg", &err), CAIRN_OK);
    assert_int_equal(s.record_count, m.n);
    assert_int_equal(s.first_seq, m.r[0].seq);
    assert_int_equal(s.raw_bytes, m.r[m.n - 1].end - LOG_HDR);
    free(seg);
    assert_records(db, &m, 0, m.n);
    seq = m.r[m.n - 1].seq;
    append_one(db, &m, 4242, 9); /* lands in segment 2, right after */
    assert_int_equal(m.r[m.n - 1].seq, seq + 1);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    db = open_store(dir, 1, 1);
    model_load_ts(db, &m);
    assert_int_equal(cairn_close(db), CAIRN_OK);

    /* Crash after the manifest swap, before the .log was unlinked. */
    write_file(dir, "0000000000000001.log", img_file(&img, "0000000000000001.log")->data,
               img_file(&img, "0000000000000001.log")->len);
    db = open_store(dir, 0, 0);
    assert_false(file_exists(dir, "0000000000000001.log"));
    assert_records(db, &m, 0, m.n);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    verify_store(dir, &p);
    assert_int_equal(p.n, 0);

    free(path);
    img_free(&img);
    tu_rmrf(dir);
    free(dir);
    model_free(&m);
}

/* Reads of a closed segment whose bytes rotted before it was sealed: the
 * records the manifest promises but the file no longer holds are an error,
 * never silently missing (CAIRN_ENOTFOUND, or an iteration that skips
 * them). */
static void check_damaged_closed_reads(cairn_db *db, const model *m, size_t bad)
{
    cairn_iter *it;
    cairn_record rec, *r;
    size_t i = 0, errors = 0;
    int rc;

    for (size_t j = 0; j < m->n; j++) {
        rc = cairn_get(db, m->r[j].seq, &r);
        if (j < bad) {
            assert_int_equal(rc, CAIRN_OK);
            assert_rec_equal(r, &m->r[j]);
            cairn_record_free(db, r);
        } else if (!is_damage_code(rc)) {
            fail_msg("cairn_get(%llu), a record the manifest lists in a damaged closed segment, "
                     "returned %d (%s), not CAIRN_ECHECKSUM/CAIRN_ECORRUPT",
                     (unsigned long long)m->r[j].seq, rc, cairn_errmsg(db));
        }
    }
    assert_int_equal(cairn_iter_open(db, NULL, &it), CAIRN_OK);
    while ((rc = cairn_iter_next(it, &rec)) != CAIRN_ENOTFOUND) {
        if (rc != CAIRN_OK) {
            assert_true(is_damage_code(rc));
            errors++;
            if (errors > 4)
                break;
            continue;
        }
        assert_true(i < bad);
        assert_rec_equal(&rec, &m->r[i]);
        i++;
    }
    cairn_iter_close(it);
    if (errors == 0)
        fail_msg("a full iteration returned records 1..%zu and then ended: records %llu..%llu "
                 "of the closed segment vanished without an error",
                 i, (unsigned long long)m->r[bad].seq, (unsigned long long)m->r[m->n - 1].seq);
}

static void test_damaged_closed_segment_is_reported_not_shortened(void **state)
{
    static const size_t bads[] = {10, 0}; /* in the middle; the very first record */
    model m;
    char *dir = build_closed_store(&m, 40), *work;
    store_img img;
    file_img *log;
    char err[CAIRN_ERRMSG_MAX];
    problems p;
    cairn_db *db;
    int rc;
    (void)state;

    img_load(&img, dir);
    log = img_file(&img, "0000000000000001.log");
    for (size_t t = 0; t < sizeof bads / sizeof bads[0]; t++) {
        size_t bad = bads[t];
        uint64_t start = bad ? m.r[bad - 1].end : LOG_HDR;
        log->data[m.r[bad].end - 12] ^= 0x04; /* inside record bad's payload */
        work = img_materialize(&img, "closedbad");

        verify_store(work, &p);
        assert_true(p.n >= 1);
        assert_string_equal(p.file[0], "0000000000000001.log");
        assert_int_equal(p.off[0], start);

        /* A writer that seals inline must not seal the shortened segment. */
        rc = try_open(work, 0, 0, err, sizeof err);
        assert_true(is_damage_code(rc) || rc == CAIRN_OK);
        assert_false(file_exists(work, "0000000000000001.seg"));
        assert_dir_is_img(work, &img);

        /* Readers, and a writer whose background thread fails to seal. */
        db = open_store(work, 0, 1);
        check_damaged_closed_reads(db, &m, bad);
        assert_int_equal(cairn_close(db), CAIRN_OK);
        db = open_store_bg(work, 0, 0, 1);
        check_damaged_closed_reads(db, &m, bad);
        assert_int_equal(cairn_close(db), CAIRN_OK);
        assert_false(file_exists(work, "0000000000000001.seg"));
        assert_true(file_exists(work, "0000000000000001.log"));

        tu_rmrf(work);
        free(work);
        log->data[m.r[bad].end - 12] ^= 0x04;
    }
    img_free(&img);
    tu_rmrf(dir);
    free(dir);
    model_free(&m);
}

/* A none/batch roll does not fdatasync the closed segment on the append
 * path, so a power loss can cut its tail. Writer recovery accepts that torn
 * tail: the MANIFEST entry is corrected, the segment is sealed, the records
 * before the cut read back, and the lost numbers are never handed out again. */
static void test_closed_segment_with_a_torn_tail_is_corrected_and_sealed(void **state)
{
    model m;
    char *dir = build_closed_store(&m, 40), *path;
    const size_t keep = 25; /* records 0..24 survive the cut */
    cairn_db *db;
    cairn_stats st;
    cairn_record *r;
    problems p;
    uint64_t lost_last, seq;
    (void)state;

    /* Cut inside record `keep`: a torn write, nothing valid after it. */
    path = tu_join(dir, "0000000000000001.log");
    assert_int_equal(truncate(path, (off_t)(m.r[keep].end - 7)), 0);
    lost_last = m.r[m.n - 1].seq;

    db = open_store(dir, 0, 0); /* writer, background = 0: seals inline */
    assert_int_equal(cairn_stats_get(db, &st), CAIRN_OK);
    assert_int_equal(st.records, keep);
    assert_int_equal(st.segments_closed, 0);
    assert_int_equal(st.segments_sealed, 1);
    assert_true(st.recovered_torn_bytes > 0);
    assert_int_equal(st.recovered_set_aside_bytes, 0);
    assert_records(db, &m, 0, keep);
    /* The cut records are gone, not damaged: not found, never an error. */
    assert_int_equal(cairn_get(db, m.r[keep].seq, &r), CAIRN_ENOTFOUND);
    assert_null(r);
    /* Their numbers stay retired: the next record is numbered past them. */
    {
        cairn_entry e = {CAIRN_REC_EVENT, "ns", 2, "{\"after\":1}", 11, NULL, 0};
        assert_int_equal(cairn_append(db, &e, &seq), CAIRN_OK);
    }
    assert_int_equal(seq, lost_last + 1);
    assert_int_equal(cairn_close(db), CAIRN_OK);
    assert_false(file_exists(dir, "0000000000000001.log"));
    assert_true(file_exists(dir, "0000000000000001.seg"));

    verify_store(dir, &p);
    assert_int_equal(p.n, 0);
    db = open_store(dir, 0, 1);
    assert_int_equal(cairn_get(db, seq, &r), CAIRN_OK);
    assert_int_equal(r->seq, seq);
    cairn_record_free(db, r);
    assert_int_equal(cairn_close(db), CAIRN_OK);

    free(path);
    tu_rmrf(dir);
    free(dir);
    model_free(&m);
}

/* Every directory of the run lives under one, removed at the end even when
 * a test failed half-way (and so could not clean up after itself). */
static char *run_dir;

static int remove_run_dir(void **state)
{
    (void)state;
    if (run_dir != NULL)
        tu_rmrf(run_dir);
    free(run_dir);
    run_dir = NULL;
    return 0;
}

int main(void)
{
    const char *fast = getenv("CAIRN_RECOVERY_TMPDIR");
    if (fast == NULL || *fast == '\0')
        fast = "/dev/shm";
    if (access(fast, W_OK | X_OK) == 0)
        setenv("TMPDIR", fast, 1);
    run_dir = tu_mkdtemp("recovery-run");
    if (run_dir == NULL) {
        fprintf(stderr, "test_recovery: cannot create a temporary directory\n");
        return 1;
    }
    setenv("TMPDIR", run_dir, 1);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torn_tail_keeps_exactly_the_whole_records),
        cmocka_unit_test(test_torn_tail_across_scan_chunks),
        cmocka_unit_test(test_records_larger_than_the_read_chunk_read_back),
        cmocka_unit_test(test_garbage_and_zeros_after_the_tail_are_truncated),
        cmocka_unit_test(test_flipped_bit_in_tail_record_drops_only_that_record),
        cmocka_unit_test(test_damage_before_valid_records_is_set_aside_not_truncated),
        cmocka_unit_test(test_set_aside_numbers_stay_retired_after_a_failed_open),
        cmocka_unit_test(test_flipped_bit_in_sealed_block_costs_only_that_block),
        cmocka_unit_test(test_flipped_bit_in_sealed_metadata_fails_open_cleanly),
        cmocka_unit_test(test_corrupt_manifest_fails_open_and_touches_nothing),
        cmocka_unit_test(test_crashes_around_a_seal_recover_to_one_sealed_copy),
        cmocka_unit_test(test_damaged_closed_segment_is_reported_not_shortened),
        cmocka_unit_test(test_closed_segment_with_a_torn_tail_is_corrected_and_sealed),
    };
    return cmocka_run_group_tests_name("recovery", tests, NULL, remove_run_dir);
}
