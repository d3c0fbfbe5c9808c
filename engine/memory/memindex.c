/*
 * memindex.c - see memindex.h; the bytes are format-spec/memindex.md.
 *
 * Layout, all little-endian, every section 8-byte aligned:
 *   common file header (64) | memory index header (136) | namespaces
 *   (64 each) | id table | content table | rows (80 each) | string heap |
 *   one text index image (and vector image) per namespace
 */
#include "memindex.h"
#include "tokenize.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "bytes.h"
#include "filehdr.h"
#include "io.h"
#include "memrec.h"
#include "seqfile.h"

#define MX_MAGIC "CAIRNMX1"
/* 2: namespaces may carry a vector image; 3: terms by tokenizer rules 2;
 * 4: the header binds the file to its log (logbind.h); 5: generations;
 * 6: a memory's name is in its text; 7: the common file header; 8: packed
 * postings (text index images of version 2); 9: no content (a memory's
 * content is read from its store record in the log); 10: rows of 80
 * bytes (one length for a row's strings; expiresAt among them when set;
 * an id cairn generated kept as 8 bytes),
 * hash tables at most 3/4 full of any size, and postings in blocks of
 * document gaps (text index images of version 4). Only the newest is
 * used: an older file is rebuilt from the log. */
#define MX_VERSION 10
/* The file's version says which tokenizer rules made its terms: new rules
 * need a new version here. */
_Static_assert(TOK_VERSION == 2, "tokenizer rules changed: bump MX_VERSION");
/* The common file header (filehdr.h) holds covered, base, file_len, nrows
 * and the sum of the memory index header that follows it, up to MX_HEAD. */
#define MX_HEAD MX_HEAD_LEN
#define MX_EXT_SUM 48 /* XXH3-64 of bytes [64, MX_HEAD) */
#define MX_OLD_HEAD_SUM 120 /* where versions 1..3 keep theirs */
#define MX_V4_HEAD_SUM 152 /* version 4 */
#define MX_V5_HEAD_SUM 168 /* versions 5 and 6 */
#define MX_NS 64
#define MX_ROW 80
#define MX_ROW_SUMMED 72 /* row bytes under its sum */
/* A row's flags in the file: MX_ROW_DEAD, and these: the row's part of
 * the heap starts with its expiresAt (i64, not 0); its id is one cairn
 * generated, kept as 8 bytes (see hexid_value). */
#define MX_ROW_EXPIRES 2u
#define MX_ROW_HEXID 4u
#define MX_HEXID_LEN 17 /* "m" and 16 hex digits */
_Static_assert(MX_HEXID_LEN <= CAIRN_MEM_ID_MAX, "a generated id fits mx_row.idbuf");
#define MX_BUF (1u << 20)
#define MX_WRITEBACK (8u << 20) /* written bytes handed to writeback at once */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the memory index file is little-endian and read in place"
#endif

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static uint64_t pad8(uint64_t n)
{
    return (n + 7) & ~(uint64_t)7;
}

/* An id of the form cairn__mem_new_id makes, "m" and 16 lowercase hex
 * digits, is kept as the digits' value (u64): 8 bytes where its text
 * takes 18. 1 and the value in *v for such an id; 0 for any other (a
 * user's id, uppercase digits, another length), kept as text. */
static int hexid_value(const char *id, uint64_t *v)
{
    uint64_t x = 0;
    /* the digits stop at a NUL: no read past it */
    if (id[0] != 'm' || !cairn__hex_lower(id + 1, MX_HEXID_LEN - 1, &x) || id[MX_HEXID_LEN] != 0)
        return 0;
    *v = x;
    return 1;
}

/* The text of an id kept as its value, into out (MX_HEXID_LEN + 1 bytes).
 * Every value gives a valid id that hexid_value reads back as itself. */
static void hexid_render(uint64_t v, char *out)
{
    static const char hex[] = "0123456789abcdef";
    out[0] = 'm';
    for (int i = 0; i < 16; i++)
        out[1 + i] = hex[(v >> (60 - 4 * i)) & 15];
    out[MX_HEXID_LEN] = 0;
}

/* A row's sum: XXH3-64 of its first MX_ROW_SUMMED bytes followed by its
 * part of the heap, given in up to four pieces (NULL ends them). One call
 * over a copy on the stack when they fit (the streaming state's reset,
 * updates and digest cost about 400 instructions a row, a quarter of a
 * close's row); the same value either way. */
#define ROW_SUM_STACK 512
static uint64_t row_sum(const uint8_t *row, const void *const *piece, const size_t *len)
{
    uint8_t buf[ROW_SUM_STACK];
    size_t n = MX_ROW_SUMMED, i;
    XXH3_state_t st;
    for (i = 0; i < 4 && piece[i] != NULL; i++)
        n += len[i];
    if (n <= sizeof buf) {
        memcpy(buf, row, MX_ROW_SUMMED);
        n = MX_ROW_SUMMED;
        for (i = 0; i < 4 && piece[i] != NULL; i++) {
            memcpy(buf + n, piece[i], len[i]);
            n += len[i];
        }
        return XXH3_64bits(buf, n);
    }
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, row, MX_ROW_SUMMED);
    for (i = 0; i < 4 && piece[i] != NULL; i++)
        XXH3_64bits_update(&st, piece[i], len[i]);
    return XXH3_64bits_digest(&st);
}

static uint64_t rows_off(uint64_t n_ns, uint64_t tcap)
{
    return MX_HEAD + n_ns * MX_NS + 2 * tcap * 8;
}


/* ---- reading ------------------------------------------------------------ */

void cairn__mx_close(memindex *mx)
{
    if (mx->map != NULL)
        munmap(mx->map, mx->len);
    memset(mx, 0, sizeof *mx);
}

static int check_header(memindex *mx, cairn__err *e)
{
    const uint8_t *h = mx->map;
    uint64_t ro, need;
    int rc;

    if (mx->len < MX_OLD_HEAD_SUM + 8 || memcmp(h, MX_MAGIC, 8) != 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: not a memory index file", mx->name);
    /* Versions 1..6 kept a u32 version at 8 (so 0 at 10, where the common
     * header keeps its length) and their own header sum. */
    if (get16(h + 10) == 0 && get32(h + 8) >= 1 && get32(h + 8) < MX_VERSION) {
        size_t at;
        mx->version = get32(h + 8);
        /* An older file's own sum first: a damaged version is damage. */
        at = mx->version < 4 ? MX_OLD_HEAD_SUM : mx->version == 4 ? MX_V4_HEAD_SUM
                                                                   : MX_V5_HEAD_SUM;
        if (mx->len < at + 8 || XXH3_64bits(h, at) != get64(h + at))
            return cairn__fail(e, CAIRN_ECHECKSUM, "%s: header checksum mismatch", mx->name);
        return cairn__fail(e, CAIRN_EVERSION, "%s: version %" PRIu32 " %s (this build writes "
                           "version %d)", mx->name, mx->version,
                           mx->version < 4   ? "is not bound to a log"
                           : mx->version == 4 ? "has no generations"
                           : mx->version == 5 ? "indexes no memory names"
                                              : "has no common file header",
                           MX_VERSION);
    }
    mx->version = get16(h + 8);
    if ((rc = cairn__filehdr_check(h, mx->len, MX_MAGIC, MX_VERSION, mx->name, e)) != CAIRN_OK)
        return rc;
    /* Versions 7 (the common header, postings of 8 bytes), 8 (a copy of
     * each content) and 9 (rows of 96 bytes, postings of one width a
     * term): under the same sums as this version, so checked as far as
     * they go. */
    if (mx->version >= 7 && mx->version < MX_VERSION) {
        if (mx->len < MX_HEAD || XXH3_64bits(h + FILEHDR_SIZE, MX_HEAD - FILEHDR_SIZE) !=
                                     get64(h + MX_EXT_SUM))
            return cairn__fail(e, CAIRN_ECHECKSUM, "%s: memory index header checksum mismatch",
                               mx->name);
        return cairn__fail(e, CAIRN_EVERSION, "%s: version %" PRIu32 " %s (this build writes "
                           "version %d)", mx->name, mx->version,
                           mx->version == 7   ? "has unpacked postings"
                           : mx->version == 8 ? "holds a copy of each content"
                                              : "has rows of 96 bytes",
                           MX_VERSION);
    }
    if (mx->version != MX_VERSION) /* 1..6 with a common header was never written */
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: version %" PRIu32 " with a common header",
                           mx->name, mx->version);
    if (mx->len < MX_HEAD || XXH3_64bits(h + FILEHDR_SIZE, MX_HEAD - FILEHDR_SIZE) !=
                                 get64(h + MX_EXT_SUM))
        return cairn__fail(e, CAIRN_ECHECKSUM, "%s: memory index header checksum mismatch",
                           mx->name);
    cairn__logbind_get(h + MX_BIND_OFF, &mx->bind);
    mx->covered = get64(h + 16);
    mx->base = get64(h + 24);
    mx->nrows = get64(h + 40);
    mx->n_ns = get32(h + 64);
    mx->n_shadow = get64(h + 72);
    mx->skipped = get64(h + 80);
    mx->deleted = get64(h + 88);
    mx->tcap = get64(h + 96);
    mx->heap_len = get64(h + 104);
    mx->unsynced_boot = get64(h + MX_UNSYNCED_BOOT);
    memcpy(mx->stemmer, h + 112, 32);
    if (get64(h + 32) != mx->len)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: %zu bytes, the header says %" PRIu64, mx->name,
                           mx->len, get64(h + 32));
    /* Bounded by the file before any product. */
    if (get32(h + 68) != 0 || mx->stemmer[31] != 0 ||
        mx->n_ns > mx->len / MX_NS || mx->nrows > mx->len / MX_ROW ||
        mx->tcap > mx->len / 8 || mx->tcap < 16 || mx->tcap < MX_TCAP(mx->nrows) ||
        mx->heap_len > mx->len || mx->n_shadow > mx->nrows || (mx->base != 0 && mx->base >= mx->covered) ||
        (mx->base == 0 && mx->n_shadow != 0))
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: header counts out of range", mx->name);
    ro = rows_off(mx->n_ns, mx->tcap);
    need = ro + mx->nrows * MX_ROW + pad8(mx->heap_len);
    if (need > mx->len)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: sections run past the end", mx->name);
    if (XXH3_64bits(h + MX_HEAD, mx->n_ns * MX_NS) != get64(h + MX_NS_SUM))
        return cairn__fail(e, CAIRN_ECHECKSUM, "%s: namespace table checksum mismatch", mx->name);
    mx->nstab = h + MX_HEAD;
    mx->idtab = (const uint64_t *)(const void *)(h + MX_HEAD + mx->n_ns * MX_NS);
    mx->ctab = (const uint64_t *)(const void *)(h + MX_HEAD + mx->n_ns * MX_NS + mx->tcap * 8);
    mx->rows = h + ro;
    mx->heap = h + ro + mx->nrows * MX_ROW;
    return CAIRN_OK;
}

/* The hash tables: under their sum, every slot names a row, one at least
 * is empty. (Readers check each slot they follow; this is for verify.)
 * *off: where the bad bytes are. */
static int check_tables(const memindex *mx, uint64_t *off, cairn__err *e)
{
    const uint8_t *h = mx->map;
    *off = (uint64_t)((const uint8_t *)mx->idtab - h);
    if (XXH3_64bits(mx->idtab, (size_t)(2 * mx->tcap * 8)) != get64(h + MX_TABLES_SUM))
        return cairn__fail(e, CAIRN_ECHECKSUM, "%s: hash table checksum mismatch", mx->name);
    for (int t = 0; t < 2; t++) {
        const uint64_t *tab = t ? mx->ctab : mx->idtab;
        uint64_t filled = 0;
        for (uint64_t i = 0; i < mx->tcap; i++) {
            if (tab[i] == 0)
                continue;
            if ((uint32_t)tab[i] > mx->nrows || (uint32_t)tab[i] <= mx->n_shadow) {
                *off = (uint64_t)((const uint8_t *)(tab + i) - h);
                return cairn__fail(e, CAIRN_ECORRUPT, "%s: hash table slot out of range", mx->name);
            }
            filled++;
        }
        *off = (uint64_t)((const uint8_t *)tab - h);
        if (mx->tcap > 0 && filled == mx->tcap)
            return cairn__fail(e, CAIRN_ECORRUPT, "%s: hash table full", mx->name);
    }
    return CAIRN_OK;
}

int cairn__mx_parse(memindex *mx, cairn__err *e)
{
    if (((uintptr_t)mx->map & 7) != 0)
        return cairn__fail(e, CAIRN_EINVAL, "%s: not 8-byte aligned", mx->name);
    return check_header(mx, e);
}

int cairn__mx_is_older(const memindex *mx)
{
    return mx->version >= 1 && mx->version < MX_VERSION;
}

/* The checks of a file just mapped, which its name says covers `covered`. */
static int parse_as(memindex *mx, uint64_t covered, cairn__err *e)
{
    int rc = cairn__mx_parse(mx, e);
    if (rc == CAIRN_OK && mx->covered != covered)
        rc = cairn__fail(e, CAIRN_ECORRUPT, "%s: covers seq %" PRIu64 ", not the one its name says",
                         mx->name, mx->covered);
    return rc;
}

int cairn__mx_open(memindex *mx, const cairn_io *io, int dirfd, uint64_t max_seq, int exact,
                   cairn__err *e)
{
    uint64_t covered = 0;
    int rc;

    memset(mx, 0, sizeof *mx);
    rc = cairn__seqfile_map(&cairn__seqfile_memindex, io, dirfd, max_seq, mx->name, sizeof mx->name, &covered,
                            &mx->map, &mx->len, MX_OLD_HEAD_SUM + 8, &mx->id, e);
    if (rc != CAIRN_OK)
        return rc;
    if (exact && covered != max_seq) { /* the file a generation lies on is gone */
        cairn__mx_close(mx);
        return cairn__fail(e, CAIRN_ENOTFOUND, "memory index file of seq %" PRIu64 " not found",
                           max_seq);
    }
    rc = parse_as(mx, covered, e);
    if (rc != CAIRN_OK) { /* keep what names the problem */
        char name[MX_NAME_MAX];
        uint32_t version = mx->version;
        cairn__fileid id = mx->id;
        strcpy(name, mx->name);
        cairn__mx_close(mx);
        strcpy(mx->name, name);
        mx->version = version;
        mx->id = id;
    }
    return rc;
}

int cairn__mx_map_fd(memindex *mx, int fd, uint64_t covered, cairn__err *e)
{
    struct stat st;
    void *p;
    int rc;

    memset(mx, 0, sizeof *mx);
    cairn__seqfile_name(&cairn__seqfile_memindex, covered, mx->name, sizeof mx->name);
    if (fstat(fd, &st) != 0)
        return cairn__fail(e, CAIRN_EIO, "fstat %s: %s", mx->name, strerror(errno));
    if ((uint64_t)st.st_size < MX_HEAD)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: too short", mx->name);
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return cairn__fail(e, CAIRN_EIO, "mmap %s: %s", mx->name, strerror(errno));
    mx->map = p;
    mx->len = (size_t)st.st_size;
    cairn__seqfile_id_of(&st, &mx->id);
    rc = parse_as(mx, covered, e);
    if (rc != CAIRN_OK)
        cairn__mx_close(mx);
    return rc;
}

/* The header of the temp file fd made to name boot (MX_UNSYNCED_BOOT, its
 * sums remade): what a file put in place without its fsync says. */
static int header_name_boot(const cairn_io *io, int fd, const char *tmp, uint64_t boot,
                            cairn__err *e)
{
    uint8_t h[MX_HEAD];
    size_t got = 0;
    int rc = cairn__io_read(io, "memindex.read", fd, h, sizeof h, 0, &got, tmp, e);
    if (rc == CAIRN_OK && got != sizeof h)
        rc = cairn__fail(e, CAIRN_EIO, "%s: short read of its header", tmp);
    if (rc != CAIRN_OK)
        return rc;
    put64(h + MX_UNSYNCED_BOOT, boot);
    put64(h + MX_EXT_SUM, XXH3_64bits(h + FILEHDR_SIZE, MX_HEAD - FILEHDR_SIZE));
    cairn__filehdr_seal(h);
    return cairn__io_write(io, "memindex.write", fd, h, sizeof h, 0, tmp, e);
}

int cairn__mx_put_in_place(const cairn_io *io, int dirfd, int fd, uint64_t covered,
                           uint64_t temp_salt, uint64_t unsynced_boot, cairn__err *e)
{
    static const cairn__publish_sites sites = {"memindex.fsync", "memindex.close",
                                               "memindex.rename", "memindex.dirsync"};
    char name[MX_NAME_MAX], tmp[SEQFILE_TEMP_MAX];
    int rc;
    cairn__seqfile_name(&cairn__seqfile_memindex, covered, name, sizeof name);
    cairn__seqfile_temp(&cairn__seqfile_memindex, covered, temp_salt, tmp, sizeof tmp);
    if (unsynced_boot != 0) {
        /* as a close's own file: no fsync, no directory fsync (the
         * MANIFEST that lists it syncs the directory) */
        rc = header_name_boot(io, fd, tmp, unsynced_boot, e);
        cairn__io_close(io, "memindex.close", fd);
        if (rc == CAIRN_OK)
            rc = cairn__io_rename(io, "memindex.rename", dirfd, tmp, name, e);
        if (rc != CAIRN_OK)
            (void)cairn__io_unlink(io, "memindex.unlink", dirfd, tmp, NULL);
        return rc;
    }
    rc = cairn__io_publish(io, &sites, CAIRN_OK, fd, dirfd, tmp, name, e);
    if (rc != CAIRN_OK)
        (void)cairn__io_unlink(io, "memindex.unlink", dirfd, tmp, NULL);
    return rc;
}

void cairn__mx_drop_temp(const cairn_io *io, int dirfd, int fd, uint64_t covered,
                         uint64_t temp_salt)
{
    char tmp[SEQFILE_TEMP_MAX];
    cairn__seqfile_temp(&cairn__seqfile_memindex, covered, temp_salt, tmp, sizeof tmp);
    cairn__io_close(io, "memindex.close", fd);
    (void)cairn__io_unlink(io, "memindex.unlink", dirfd, tmp, NULL);
}

int cairn__mx_ns(const memindex *mx, size_t i, const char *stemmer, const char **name,
                 uint64_t *live, cairn__ramidx **idx, cairn__vecset **vec)
{
    const uint8_t *p;
    uint64_t noff, nlen, toff, tlen, thead, voff, vlen = 0;
    size_t used = 0;
    int rc;

    *idx = NULL;
    *vec = NULL;
    if (i >= mx->n_ns)
        return CAIRN_ECORRUPT;
    p = mx->nstab + i * MX_NS;
    noff = get64(p);
    nlen = get32(p + 8);
    toff = get64(p + 24);
    tlen = get64(p + 32);
    thead = get64(p + 40);
    voff = get64(p + 56);
    if (voff != 0) { /* the vector image says how long it is */
        if (voff % 8 != 0 || voff > mx->len || mx->len - voff < 32)
            return CAIRN_ECORRUPT;
        vlen = get64(mx->map + voff + 24);
        if (vlen > mx->len - voff)
            return CAIRN_ECORRUPT;
    }
    if (noff > mx->heap_len || nlen >= mx->heap_len - noff ||
        mx->heap[noff + nlen] != 0 || memchr(mx->heap + noff, 0, nlen) != NULL ||
        toff % 8 != 0 || toff > mx->len || tlen > mx->len - toff || thead > tlen)
        return CAIRN_ECORRUPT;
    rc = cairn__ramidx_map(idx, NULL, stemmer, mx->map + toff, tlen, &used);
    if (rc == CAIRN_OK && (used != tlen || cairn__ramidx_count(*idx) != get64(p + 16))) {
        cairn__ramidx_free(*idx);
        *idx = NULL;
        rc = CAIRN_ECORRUPT;
    }
    if (rc == CAIRN_OK && voff != 0) {
        rc = cairn__vecset_map(vec, mx->map + voff, (size_t)vlen);
        if (rc == CAIRN_OK && cairn__vecset_live(*vec) > get64(p + 16))
            rc = CAIRN_ECORRUPT; /* more vectors than memories */
        if (rc != CAIRN_OK) {
            cairn__vecset_free(*vec);
            *vec = NULL;
            cairn__ramidx_free(*idx);
            *idx = NULL;
        }
    }
    *name = (const char *)mx->heap + noff;
    *live = get64(p + 16);
    return rc;
}

uint64_t cairn__mx_row_offset(const memindex *mx, size_t i)
{
    return (uint64_t)(mx->rows - mx->map) + (uint64_t)i * MX_ROW;
}

uint64_t cairn__mx_row_seq(const memindex *mx, size_t i)
{
    return get64(mx->rows + i * MX_ROW);
}

int cairn__mx_row(const memindex *mx, size_t i, mx_row *r)
{
    const uint8_t *p;
    uint64_t off, total, lead;
    uint32_t clen, flags;
    const char *s, *end, *cat, *nul;
    int hex;

    if (i >= mx->nrows)
        return CAIRN_ECORRUPT;
    p = mx->rows + i * MX_ROW;
    off = get64(p + 48);
    clen = get32(p + 56);
    total = get32(p + 60);
    flags = get32(p + 68);
    lead = flags & MX_ROW_EXPIRES ? 8 : 0;
    hex = (flags & MX_ROW_HEXID) != 0;
    /* at least an id (8 bytes, or 1 and its NUL) and a category's NUL */
    if (off > mx->heap_len || total > mx->heap_len - off || total < lead + (hex ? 9 : 3) ||
        get32(p + 64) >= mx->n_ns ||
        (flags & ~(MX_ROW_DEAD | MX_ROW_EXPIRES | MX_ROW_HEXID)) != 0)
        return CAIRN_ECORRUPT;
    {
        const void *piece[2] = {mx->heap + off, NULL};
        size_t plen[1] = {(size_t)total};
        if (row_sum(p, piece, plen) != get64(p + 72))
            return CAIRN_ECHECKSUM;
    }
    /* id NUL category NUL [metadata NUL], after expiresAt when set; with
     * the hexid flag the id is a u64 and has no NUL */
    s = (const char *)mx->heap + off + lead;
    end = (const char *)mx->heap + off + total;
    if (end[-1] != 0)
        return CAIRN_ECORRUPT;
    if (hex) {
        hexid_render(get64((const uint8_t *)s), r->idbuf);
        cat = s + 8; /* before end: the length was checked above */
    } else {
        if ((nul = memchr(s, 0, (size_t)(end - s))) == NULL || nul == s ||
            nul - s > CAIRN_MEM_ID_MAX || nul + 1 == end)
            return CAIRN_ECORRUPT;
        cat = nul + 1;
    }
    nul = memchr(cat, 0, (size_t)(end - cat));
    r->metadata = nul + 1 < end ? nul + 1 : NULL;
    /* a dead shadow row keeps the id alone: no category, no metadata */
    if ((r->metadata && (r->metadata == end - 1 ||
                         memchr(r->metadata, 0, (size_t)(end - r->metadata)) != end - 1)) ||
        (nul == cat && !(flags & MX_ROW_DEAD)) || clen > MEM_CONTENT_MAX)
        return CAIRN_ECORRUPT;
    r->seq = get64(p);
    memcpy(&r->importance, p + 8, 8);
    r->created = (int64_t)get64(p + 16);
    r->accessed = (int64_t)get64(p + 24);
    r->access_count = get64(p + 32);
    r->content_hash = get64(p + 40);
    r->expires = 0;
    if (lead) {
        r->expires = (int64_t)get64(mx->heap + off);
        if (r->expires == 0)
            return CAIRN_ECORRUPT; /* a set flag says it is set */
    }
    r->content = NULL; /* in the log, at the row's seq */
    r->content_len = clen;
    r->id = hex ? r->idbuf : s;
    r->category = cat;
    r->nsi = get32(p + 64);
    r->flags = flags & MX_ROW_DEAD;
    /* Shadow rows first, each of a memory below the base; then the file's own. */
    if (i < mx->n_shadow ? r->seq > mx->base : r->seq <= mx->base || r->flags != 0)
        return CAIRN_ECORRUPT;
    return CAIRN_OK;
}

int cairn__mx_check_all(const memindex *mx, uint64_t *off, cairn__err *e)
{
    int rc0 = check_tables(mx, off, e);
    uint64_t *per_ns;
    if (rc0 != CAIRN_OK)
        return rc0;
    per_ns = calloc(mx->n_ns + 1, sizeof *per_ns);
    if (per_ns == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "no memory to verify %s", mx->name);
    for (uint64_t i = 0; i < mx->nrows; i++) {
        mx_row r;
        int rc = cairn__mx_row(mx, (size_t)i, &r);
        *off = cairn__mx_row_offset(mx, (size_t)i);
        if (rc == CAIRN_OK && i >= mx->n_shadow)
            per_ns[r.nsi]++;
        if (rc != CAIRN_OK)
            rc0 = cairn__fail(e, rc, "%s: row %" PRIu64 " at offset %" PRIu64 " is damaged",
                              mx->name, i, *off);
        else if (i > 0 && i != mx->n_shadow && r.seq <= cairn__mx_row_seq(mx, (size_t)i - 1))
            rc0 = cairn__fail(e, CAIRN_ECORRUPT, "%s: row %" PRIu64 " out of order", mx->name, i);
        else if (r.seq > mx->covered)
            rc0 = cairn__fail(e, CAIRN_ECORRUPT, "%s: row %" PRIu64 " after the covered seq",
                              mx->name, i);
        if (rc0 != CAIRN_OK) {
            free(per_ns);
            return rc0;
        }
    }
    for (uint64_t i = 0; i < mx->n_ns; i++) {
        const char *name;
        uint64_t live;
        cairn__ramidx *x = NULL;
        cairn__vecset *v = NULL;
        const uint8_t *p = mx->nstab + i * MX_NS;
        int rc = cairn__mx_ns(mx, (size_t)i, mx->stemmer, &name, &live, &x, &v);
        /* The namespace's text image, where the table entry points inside
         * the file; else the entry itself. */
        *off = get64(p + 24) < mx->len ? get64(p + 24) : (uint64_t)(p - mx->map);
        if (rc == CAIRN_OK && XXH3_64bits(mx->map + get64(p + 24), get64(p + 40)) != get64(p + 48))
            rc = CAIRN_ECHECKSUM;
        if (rc == CAIRN_OK)
            rc = cairn__ramidx_check(x);
        if (rc == CAIRN_OK && v != NULL)
            rc = cairn__vecset_check_all(v);
        cairn__ramidx_free(x);
        cairn__vecset_free(v);
        if (rc == CAIRN_OK && live != per_ns[i])
            rc = CAIRN_ECORRUPT;
        if (rc != CAIRN_OK) {
            free(per_ns);
            return cairn__fail(e, rc, "%s: the text index or live count of namespace %" PRIu64
                               " (at offset %" PRIu64 ") is damaged", mx->name, i, *off);
        }
    }
    free(per_ns);
    return CAIRN_OK;
}

/* ---- writing ------------------------------------------------------------ */

typedef struct wbuf {
    const cairn_io *io;
    int fd;
    const char *name;
    uint8_t *b;
    size_t n;
    uint64_t off;          /* file offset of b[0] */
    cairn__err *e;
    const int *stop;
    uint64_t wb_off;       /* bytes below it are handed to writeback */
    int no_writeback;      /* a file put in place unsynced: left to the kernel */
    /* the text image being written: its head's sum */
    int in_head;
    XXH3_state_t head;
    uint64_t head_len, head_sum, img_start;
} wbuf;

static int flush(wbuf *w)
{
    int rc;
    if (w->stop != NULL && __atomic_load_n(w->stop, __ATOMIC_ACQUIRE))
        return cairn__fail(w->e, CAIRN_ELOCKED, "memory index: the write was given up");
    rc = w->n ? cairn__io_write_mapped(w->io, "memindex.write", w->fd, w->b, w->n, w->off,
                                       w->name, w->e)
              : CAIRN_OK;
    w->off += w->n;
    w->n = 0;
    if (rc == CAIRN_OK && !w->no_writeback && w->off - w->wb_off >= MX_WRITEBACK) {
        cairn__io_writeback(w->fd, w->wb_off, w->off - w->wb_off);
        w->wb_off = w->off;
    }
    return rc;
}

static int put(void *user, const void *bytes, size_t len)
{
    wbuf *w = user;
    const uint8_t *p = bytes;
    if (bytes == NULL) { /* ramidx_write: the head ends here */
        w->in_head = 0;
        w->head_len = w->off + w->n - w->img_start;
        w->head_sum = XXH3_64bits_digest(&w->head);
        return CAIRN_OK;
    }
    if (w->in_head)
        XXH3_64bits_update(&w->head, bytes, len);
    while (len > 0) {
        size_t k = MX_BUF - w->n < len ? MX_BUF - w->n : len;
        int rc;
        memcpy(w->b + w->n, p, k);
        w->n += k;
        p += k;
        len -= k;
        if (w->n == MX_BUF && (rc = flush(w)) != CAIRN_OK)
            return rc;
    }
    return CAIRN_OK;
}

static int put_pad(wbuf *w)
{
    static const uint8_t zeros[8];
    uint64_t at = w->off + w->n;
    return put(w, zeros, (size_t)(pad8(at) - at));
}

/* A row's content length: its memory's (the content itself is in the
 * log); 0 in a shadow row, whose memory is the row's below. */
static size_t row_content_len(const mx_in *in, size_t i, const mx_row *r)
{
    return i < in->n_shadow ? 0 : r->content_len;
}

/* Empty metadata is none ({}): it has no bytes in the heap. */
static int has_metadata(const mx_row *r)
{
    return r->metadata != NULL && r->metadata[0] != 0;
}

/* Bytes of a row's part of the heap: expiresAt when set, its id (8
 * bytes when hex is set: hexid_value), then its strings. */
static uint64_t row_strings(const mx_row *r, int hex)
{
    return (r->expires != 0 ? 8 : 0) + (hex ? 8 : (uint64_t)strlen(r->id) + 1) +
           strlen(r->category) + 1 + (has_metadata(r) ? strlen(r->metadata) + 1 : 0);
}

static uint64_t vec_rows(const mx_ns_in *ns)
{
    uint64_t n = 0;
    for (size_t i = 0; i < ns->n_vecs; i++)
        n += cairn__vecset_live(ns->vecs[i]);
    return n;
}

/* A slot: the row + 1, tagged with the hash's top 32 bits (a probe skips
 * the other hashes without reading their rows). */
static void table_put(uint64_t *t, uint64_t cap, uint64_t h, uint32_t row)
{
    uint64_t i = cairn__mx_slot(h, cap);
    while (t[i] != 0)
        i = i + 1 == cap ? 0 : i + 1;
    t[i] = (h >> 32 << 32) | ((uint64_t)row + 1);
}

/* Row i of the input, from its array or its callback (into *tmp). A dead
 * shadow row is written with its id alone (no category, no metadata). */
static const mx_row *row_of(const mx_in *in, size_t i, mx_row *tmp)
{
    const mx_row *r;
    if (in->row_at != NULL) { /* no array then: rows is NULL */
        in->row_at(in->row_user, i, tmp);
        r = tmp;
    } else {
        r = &in->rows[i];
    }
    if (i < in->n_shadow && (r->flags & MX_ROW_DEAD) && (r->category[0] != 0 || r->metadata)) {
        if (r != tmp) {
            *tmp = *r;
            if (r->id == r->idbuf) /* a row as cairn__mx_row read it */
                tmp->id = tmp->idbuf;
        }
        tmp->category = "";
        tmp->metadata = NULL;
        r = tmp;
    }
    return r;
}

int cairn__mx_write(const cairn_io *io, int dirfd, const mx_in *in, cairn__err *e)
{
    static const cairn__publish_sites sites = {"memindex.fsync", "memindex.close",
                                               "memindex.rename", "memindex.dirsync"};
    uint64_t tcap = 16, ro, heap_len = 0, at;
    uint8_t *head = NULL, h[MX_HEAD];
    uint64_t *idtab = NULL, *ctab = NULL;
    char name[MX_NAME_MAX], tmp[SEQFILE_TEMP_MAX];
    wbuf w;
    int rc = CAIRN_OK;

    if (in->stemmer == NULL || strlen(in->stemmer) >= 32 || in->nrows >= UINT32_MAX ||
        in->n_shadow > in->nrows || (in->base == 0 && in->n_shadow != 0) ||
        (in->base != 0 && in->base >= in->covered))
        return cairn__fail(e, CAIRN_EINVAL, "memory index: bad input");
    if (tcap < MX_TCAP(in->nrows))
        tcap = MX_TCAP(in->nrows);
    ro = rows_off(in->n_ns, tcap);
    cairn__seqfile_name(&cairn__seqfile_memindex, in->covered, name, sizeof name);
    cairn__seqfile_temp(&cairn__seqfile_memindex, in->covered, in->temp_salt, tmp, sizeof tmp);
    memset(&w, 0, sizeof w);
    w.io = io;
    w.name = tmp;
    w.e = e;
    w.fd = -1;
    w.stop = in->stop;
    w.no_writeback = in->unsynced_boot != 0;
    head = calloc(1, (size_t)(ro - MX_HEAD));
    idtab = (uint64_t *)(void *)(head ? head + in->n_ns * MX_NS : NULL);
    ctab = (uint64_t *)(void *)(head ? head + in->n_ns * MX_NS + tcap * 8 : NULL);
    w.b = malloc(MX_BUF);
    if (head == NULL || w.b == NULL) {
        rc = cairn__fail(e, CAIRN_ENOMEM, "memory index: no memory");
        goto out;
    }
    rc = cairn__io_open(io, "memindex.create", dirfd, tmp,
                        (in->temp_fd != NULL ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC, 0644, &w.fd, e);
    if (rc != CAIRN_OK)
        goto out;
    if (in->temp_salt != 0) /* renamed outside this turn: another writer's open leaves it */
        cairn__seqfile_temp_hold(w.fd);
    /* The namespace names open the heap, then each row's strings. */
    for (size_t i = 0; i < in->n_ns; i++)
        heap_len += strlen(in->ns[i].name) + 1;
    w.off = ro;
    w.wb_off = ro;
    for (size_t i = 0; i < in->nrows && rc == CAIRN_OK; i++) {
        mx_row tmp_row;
        const mx_row *r = row_of(in, i, &tmp_row);
        uint8_t row[MX_ROW];
        size_t clen = row_content_len(in, i, r), il = strlen(r->id), cl = strlen(r->category);
        size_t ml = has_metadata(r) ? strlen(r->metadata) : 0;
        uint8_t ex[8], idv[8];
        uint64_t v = 0;
        int hex = hexid_value(r->id, &v);
        uint64_t strs = row_strings(r, hex);
        /* strs fits its u32: a record is at most CAIRN_RECORD_MAX */
        memset(row, 0, sizeof row);
        put64(row, r->seq);
        memcpy(row + 8, &r->importance, 8);
        put64(row + 16, (uint64_t)r->created);
        put64(row + 24, (uint64_t)r->accessed);
        put64(row + 32, r->access_count);
        put64(row + 40, r->content_hash);
        put64(row + 48, heap_len);
        put32(row + 56, (uint32_t)clen);
        put32(row + 60, (uint32_t)strs);
        put32(row + 64, r->nsi);
        put32(row + 68, (i < in->n_shadow ? r->flags : 0) | (r->expires != 0 ? MX_ROW_EXPIRES : 0) |
                            (hex ? MX_ROW_HEXID : 0));
        put64(ex, (uint64_t)r->expires);
        put64(idv, v);
        {
            const void *piece[5] = {NULL, NULL, NULL, NULL, NULL};
            size_t plen[4], np = 0;
            if (r->expires != 0) {
                piece[np] = ex;
                plen[np++] = 8;
            }
            piece[np] = hex ? (const void *)idv : (const void *)r->id;
            plen[np++] = hex ? 8 : il + 1;
            piece[np] = r->category;
            plen[np++] = cl + 1;
            if (ml) {
                piece[np] = r->metadata;
                plen[np++] = ml + 1;
            }
            put64(row + 72, row_sum(row, piece, plen));
        }
        heap_len += strs;
        if (i >= in->n_shadow) {
            table_put(idtab, tcap, in->hash_id(r->id), (uint32_t)i);
            table_put(ctab, tcap, r->content_hash, (uint32_t)i);
        }
        rc = put(&w, row, sizeof row);
    }
    for (size_t i = 0; i < in->n_ns && rc == CAIRN_OK; i++)
        rc = put(&w, in->ns[i].name, strlen(in->ns[i].name) + 1);
    for (size_t i = 0; i < in->nrows && rc == CAIRN_OK; i++) {
        mx_row tmp_row;
        const mx_row *r = row_of(in, i, &tmp_row);
        uint8_t ex[8], idv[8];
        uint64_t v = 0;
        put64(ex, (uint64_t)r->expires);
        rc = r->expires != 0 ? put(&w, ex, 8) : CAIRN_OK;
        if (rc == CAIRN_OK && hexid_value(r->id, &v)) {
            put64(idv, v);
            rc = put(&w, idv, 8);
        } else if (rc == CAIRN_OK) {
            rc = put(&w, r->id, strlen(r->id) + 1);
        }
        if (rc == CAIRN_OK)
            rc = put(&w, r->category, strlen(r->category) + 1);
        if (rc == CAIRN_OK && has_metadata(r))
            rc = put(&w, r->metadata, strlen(r->metadata) + 1);
    }
    if (rc == CAIRN_OK)
        rc = put_pad(&w);
    if (rc == CAIRN_OK && in->images_ready != NULL && (rc = in->images_ready(in->hook_user)) != CAIRN_OK)
        rc = cairn__fail(e, rc, "memory index: the text indexes could not be completed");
    at = 0;
    for (size_t i = 0; i < in->n_ns && rc == CAIRN_OK; i++) {
        uint8_t *p = head + i * MX_NS;
        put64(p, at);
        put32(p + 8, (uint32_t)strlen(in->ns[i].name));
        at += strlen(in->ns[i].name) + 1;
        put64(p + 16, in->ns[i].live);
        w.img_start = w.off + w.n;
        w.in_head = 1;
        XXH3_64bits_reset(&w.head);
        if (in->ns[i].n_merge == 0 && in->ns[i].img != NULL) {
            rc = cairn__ramidx_image_put(in->ns[i].img, put, &w);
        } else if (in->ns[i].n_merge == 0) {
            rc = cairn__ramidx_write(in->ns[i].idx, put, &w);
        } else {
            rc = cairn__ramidx_merge_write(NULL, in->stemmer, in->ns[i].merge, in->ns[i].n_merge,
                                           put, &w, in->stop);
            if ((rc == CAIRN_ECORRUPT || rc == CAIRN_ECHECKSUM) && in->merge_damaged != NULL)
                *in->merge_damaged = 1;
            if (rc != CAIRN_OK && rc != CAIRN_EIO && rc != CAIRN_EFULL && rc != CAIRN_ELOCKED)
                rc = cairn__fail(e, rc, "memory index: merging the text index of \"%s\": %s",
                                 in->ns[i].name, cairn_strerror(rc));
        }
        if (rc == CAIRN_OK && w.in_head)
            rc = cairn__fail(e, CAIRN_EINVAL, "memory index: text image without a head mark");
        put64(p + 24, w.img_start);
        put64(p + 32, w.off + w.n - w.img_start);
        put64(p + 40, w.head_len);
        put64(p + 48, w.head_sum);
        if (rc == CAIRN_OK)
            rc = put_pad(&w);
        if (rc == CAIRN_OK && vec_rows(&in->ns[i]) > 0) {
            put64(p + 56, w.off + w.n);
            rc = cairn__vecset_write(in->ns[i].vecs, in->ns[i].n_vecs, put, &w);
            if (rc != CAIRN_OK && rc != CAIRN_EIO && rc != CAIRN_EFULL)
                rc = cairn__fail(e, rc, "memory index: the vectors of namespace %zu: %s", i,
                                 cairn_strerror(rc));
        }
    }
    if (rc == CAIRN_OK)
        rc = flush(&w);
    if (rc == CAIRN_OK)
        rc = cairn__io_write_mapped(io, "memindex.write", w.fd, head, (size_t)(ro - MX_HEAD),
                                    MX_HEAD, tmp, e);
    if (rc == CAIRN_OK) {
        cairn__filehdr_init(h, MX_MAGIC, MX_VERSION);
        memset(h + FILEHDR_SIZE, 0, sizeof h - FILEHDR_SIZE);
        put64(h + 16, in->covered);
        put64(h + 24, in->base);
        put64(h + 32, w.off);
        put64(h + 40, in->nrows);
        put32(h + 64, (uint32_t)in->n_ns);
        put64(h + 72, in->n_shadow);
        put64(h + 80, in->skipped);
        put64(h + 88, in->deleted);
        put64(h + 96, tcap);
        put64(h + 104, heap_len);
        put64(h + MX_UNSYNCED_BOOT, in->unsynced_boot);
        memcpy(h + 112, in->stemmer, strlen(in->stemmer));
        put64(h + MX_NS_SUM, XXH3_64bits(head, (size_t)(in->n_ns * MX_NS)));
        put64(h + MX_TABLES_SUM, XXH3_64bits(head + in->n_ns * MX_NS, (size_t)(2 * tcap * 8)));
        cairn__logbind_put(h + MX_BIND_OFF, &in->bind);
        put64(h + MX_EXT_SUM, XXH3_64bits(h + FILEHDR_SIZE, MX_HEAD - FILEHDR_SIZE));
        cairn__filehdr_seal(h);
        rc = cairn__io_write(io, "memindex.write", w.fd, h, sizeof h, 0, tmp, e);
    }
    if (in->temp_fd != NULL) {
        /* left under its temp name; the disk starts on it meanwhile */
        if (rc == CAIRN_OK) {
            cairn__io_writeback(w.fd, 0, 0);
            *in->temp_fd = w.fd;
        } else {
            cairn__io_close(io, "memindex.close", w.fd);
            (void)cairn__io_unlink(io, "memindex.unlink", dirfd, tmp, NULL);
        }
        w.fd = -1;
        goto out;
    }
    if (rc == CAIRN_OK && in->gate != NULL) {
        /* synced before the gate, which may hold others up while it is open;
         * not at all when the write was given up meanwhile (a close waits) */
        if (in->stop != NULL && __atomic_load_n(in->stop, __ATOMIC_ACQUIRE))
            rc = cairn__fail(e, CAIRN_ELOCKED, "memory index: the write was given up");
        if (rc == CAIRN_OK && in->unsynced_boot == 0)
            rc = cairn__io_fsync_stoppable(io, "memindex.fsync", w.fd, w.off, in->stop, tmp, e);
        if (rc == CAIRN_OK && (rc = in->gate(in->gate_user)) != CAIRN_OK)
            (void)cairn__fail(e, rc, "memory index: %s not put in place", name);
    }
    if (in->unsynced_boot != 0) {
        /* No fsync, and no directory fsync either (on ext4 a journal
         * commit that may wait for the file's blocks): the MANIFEST that
         * lists it next syncs the directory. Until then a crash of the
         * machine loses the name, or leaves a file its boot sets aside. */
        cairn__io_close(io, "memindex.close", w.fd);
        w.fd = -1;
        if (rc == CAIRN_OK)
            rc = cairn__io_rename(io, "memindex.rename", dirfd, tmp, name, e);
        if (rc != CAIRN_OK)
            (void)cairn__io_unlink(io, "memindex.unlink", dirfd, tmp, NULL);
        goto out;
    }
    /* with a gate, the file was synced before it */
    rc = in->gate != NULL ? cairn__io_publish_synced(io, &sites, rc, w.fd, dirfd, tmp, name, e)
                          : cairn__io_publish(io, &sites, rc, w.fd, dirfd, tmp, name, e);
    w.fd = -1;
    if (rc != CAIRN_OK)
        (void)cairn__io_unlink(io, "memindex.unlink", dirfd, tmp, NULL);
out:
    if (w.fd >= 0)
        cairn__io_close(io, "memindex.close", w.fd);
    free(w.b);
    free(head);
    return rc;
}
