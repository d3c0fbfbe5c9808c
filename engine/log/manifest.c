/*
 * manifest.c - the MANIFEST file: which segments are live, in which form,
 * and the store's settings. It is only ever replaced whole: write a temp
 * file, fsync it, rename it over MANIFEST, fsync the directory. A crash at
 * any point leaves either the old or the new manifest, never a mix; the
 * trailing checksum catches anything else.
 */
#include "manifest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "alloc.h"
#include "bytes.h"
#include "filehdr.h"
#include "io.h"
#include "seqfile.h"

void cairn__manifest_init(manifest *m)
{
    memset(m, 0, sizeof *m);
    m->max_memories = MAN_DEFAULT_MAX_MEMORIES;
    m->label_rule = MAN_LABELS_FOLDED;
    m->reflect_threshold = MAN_DEFAULT_REFLECT;
    m->core_budget = MAN_DEFAULT_CORE_BUDGET;
    m->core_section_budget = MAN_DEFAULT_SECTION_BUDGET;
}

int cairn__tier_settings_ok(uint32_t reflect, uint32_t core, uint32_t section)
{
    return reflect >= 1 && reflect <= MAN_TIER_MAX && core >= 1 && core <= MAN_TIER_MAX &&
           section >= 1 && section <= core;
}

int cairn__manifest_encode(const manifest *m, const cairn_allocator *a, uint8_t **out,
                           size_t *len)
{
    size_t n = FILEHDR_SIZE + MAN_STORE_BLOCK + m->n * MAN_ENTRY_SIZE +
               m->n_types * MAN_TYPE_SIZE + m->n_files * MAN_FILE_SIZE + 8;
    uint8_t *b, *p;

    if (cairn__store_id_is_zero(m->store_id))
        return CAIRN_EINVAL; /* a writer gives the store an id first */
    if ((b = cairn__calloc(a, 1, n)) == NULL)
        return CAIRN_ENOMEM;
    cairn__filehdr_init(b, MAGIC_MAN, MAN_VERSION);
    put_le64(b + 16, m->generation);
    put_le64(b + 24, m->next_id);
    put_le64(b + 32, m->segment_size);
    put_le32(b + 40, m->batch_ms);
    b[44] = m->durability;
    put_le32(b + 48, (uint32_t)m->n);
    put_le32(b + 52, MAN_ENTRY_SIZE);
    cairn__filehdr_seal(b);
    p = b + FILEHDR_SIZE;
    memcpy(p, m->store_id, MAN_STORE_ID_LEN);
    put_le64(p + 16, m->synced_seq);
    put_le64(p + 24, m->lost_total);
    put_le64(p + 32, m->max_memories);
    put_le32(p + 40, m->retain.memories);
    put_le64(p + 48, m->retain.grace_ms);
    put_le64(p + 56, m->dropped_upto);
    put_le64(p + 64, m->retain.events_max_age_ms);
    put_le64(p + 72, m->retain.events_max_bytes);
    put_le64(p + 80, m->deaths_dropped);
    put_le32(p + 88, m->label_rule);
    put_le32(p + 92, m->reflect_threshold);
    put_le32(p + 96, m->core_budget);
    put_le32(p + 100, m->core_section_budget);
    put_le32(p + 104, (uint32_t)m->n_types);
    put_le32(p + 108, (uint32_t)m->n_files);
    p += MAN_STORE_BLOCK;
    for (size_t i = 0; i < m->n; i++, p += MAN_ENTRY_SIZE) {
        const manifest_entry *x = &m->e[i];
        put_le64(p, x->id);
        p[8] = x->kind;
        p[9] = x->chained ? MAN_ENTRY_CHAINED : 0;
        put_le32(p + 12, x->rev);
        put_le64(p + 16, x->base_seq);
        put_le64(p + 24, x->last_seq);
        put_le64(p + 32, x->count);
        put_le64(p + 40, (uint64_t)x->first_ts);
        put_le64(p + 48, (uint64_t)x->last_ts);
        if (x->chained)
            memcpy(p + 56, x->chain, sizeof x->chain);
    }
    for (size_t i = 0; i < m->n_types; i++, p += MAN_TYPE_SIZE) {
        size_t l = strlen(m->types[i].name);
        put_le16(p, m->types[i].type);
        p[2] = (uint8_t)l;
        memcpy(p + 8, m->types[i].name, l); /* the rest stays zero (calloc) */
    }
    for (size_t i = 0; i < m->n_files; i++, p += MAN_FILE_SIZE) {
        p[0] = m->files[i].kind;
        put_le64(p + 8, m->files[i].seq);
        put_le64(p + 16, m->files[i].len);
        put_le64(p + 24, m->files[i].sum);
    }
    put_le64(p, XXH3_64bits(b, n - 8));
    *out = b;
    *len = n;
    return CAIRN_OK;
}

static int check_entries(const manifest *m, cairn__err *e)
{
    for (size_t i = 0; i < m->n; i++) {
        const manifest_entry *x = &m->e[i];
        int last = i + 1 == m->n;
        if (x->kind < SEG_SEALED || x->kind > SEG_ACTIVE)
            return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: entry %zu has unknown kind %u", i,
                               x->kind);
        if ((x->kind == SEG_ACTIVE) != last)
            return cairn__fail(e, CAIRN_ECORRUPT,
                               "MANIFEST: entry %zu: the active segment must be the last entry",
                               i);
        if (x->id == 0 || x->id >= m->next_id || (i > 0 && x->id <= m->e[i - 1].id))
            return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: entry %zu: bad segment id", i);
        if (x->base_seq == 0)
            return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: entry %zu: base_seq 0", i);
        if (x->kind == SEG_ACTIVE && (x->last_seq | x->count | (uint64_t)x->first_ts |
                                      (uint64_t)x->last_ts) != 0)
            return cairn__fail(e, CAIRN_ECORRUPT,
                               "MANIFEST: entry %zu: the active entry's counters must be 0", i);
        if (x->rev != 0 && x->kind != SEG_SEALED)
            return cairn__fail(e, CAIRN_ECORRUPT,
                               "MANIFEST: entry %zu: only a sealed segment is compacted", i);
        if (x->kind != SEG_ACTIVE) {
            if (x->last_seq + 1 < x->base_seq || x->last_seq - x->base_seq + 1 != x->count ||
                (x->count > 0 && x->first_ts > x->last_ts))
                return cairn__fail(e, CAIRN_ECORRUPT,
                                   "MANIFEST: entry %zu: inconsistent sequence range", i);
        }
        /* A gap is legal (recovery set damaged records aside and never reuses
         * their numbers); an overlap is not. */
        if (i > 0 && x->base_seq <= m->e[i - 1].last_seq)
            return cairn__fail(e, CAIRN_ECORRUPT,
                               "MANIFEST: entry %zu: sequence range overlaps entry %zu", i,
                               i - 1);
    }
    if (m->n == 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: no active segment");
    return CAIRN_OK;
}

int cairn__manifest_decode(const uint8_t *buf, size_t len, const cairn_allocator *a,
                           manifest *m, cairn__err *e)
{
    uint32_t count, n_types = 0, n_files = 0;
    const uint8_t *p;
    size_t block, want, esize;
    int rc;

    memset(m, 0, sizeof *m);
    rc = cairn__filehdr_check(buf, len, MAGIC_MAN, MAN_VERSION, "MANIFEST", e);
    if (rc != CAIRN_OK)
        return rc;
    m->version = get_le16(buf + 8);
    /* version 1 has no store block; version 2's has no max_memories,
     * version 3's no retention, version 4's no deaths_dropped, version 5's
     * no tier settings */
    block = m->version >= 7   ? MAN_STORE_BLOCK
            : m->version == 6 ? MAN_STORE_BLOCK_V6
            : m->version == 5 ? MAN_STORE_BLOCK_V5
            : m->version == 4 ? MAN_STORE_BLOCK_V4
            : m->version == 3 ? MAN_STORE_BLOCK_V3
            : m->version == 2 ? MAN_STORE_BLOCK_V2
                              : 0;
    m->max_memories = MAN_DEFAULT_MAX_MEMORIES;
    m->label_rule = MAN_LABELS_EXACT;
    m->reflect_threshold = MAN_DEFAULT_REFLECT;
    m->core_budget = MAN_DEFAULT_CORE_BUDGET;
    m->core_section_budget = MAN_DEFAULT_SECTION_BUDGET;
    count = get_le32(buf + 48);
    esize = m->version >= 8 ? MAN_ENTRY_SIZE : MAN_ENTRY_SIZE_V7;
    if (get_le32(buf + 52) != esize || count > MAN_MAX_ENTRIES ||
        buf[45] | buf[46] | buf[47] || buf[44] > CAIRN_DURABILITY_FULL)
        return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: bad entry size, count or settings");
    if (block >= MAN_STORE_BLOCK) {
        /* n_types (and n_files) size the file: the trailer's sum is
         * checked before they are believed */
        size_t base = FILEHDR_SIZE + block + (size_t)count * esize + 8;
        if (len < base || (len - base) % (m->version < 9 ? MAN_TYPE_SIZE : 8) != 0)
            return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: %zu bytes, not a size of its "
                               "entries and named types", len);
        if (get_le64(buf + len - 8) != XXH3_64bits(buf, len - 8))
            return cairn__fail(e, CAIRN_ECHECKSUM, "MANIFEST: checksum mismatch at offset %zu",
                               len - 8);
        n_types = get_le32(buf + FILEHDR_SIZE + 104);
        n_files = get_le32(buf + FILEHDR_SIZE + 108);
        if (n_types > MAN_TYPES_MAX || (m->version < 9 && n_files != 0) ||
            n_files > MAN_FILES_MAX)
            return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: %u named types or %u derived files "
                               "(offset %u)", n_types, n_files, FILEHDR_SIZE + 104);
    }
    want = FILEHDR_SIZE + block + (size_t)count * esize + (size_t)n_types * MAN_TYPE_SIZE +
           (size_t)n_files * MAN_FILE_SIZE + 8;
    if (len != want)
        return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: %zu bytes, expected %zu", len, want);
    if (get_le64(buf + len - 8) != XXH3_64bits(buf, len - 8))
        return cairn__fail(e, CAIRN_ECHECKSUM, "MANIFEST: checksum mismatch at offset %zu",
                           len - 8);
    if (block != 0) {
        p = buf + FILEHDR_SIZE;
        memcpy(m->store_id, p, MAN_STORE_ID_LEN);
        m->synced_seq = get_le64(p + 16);
        m->lost_total = get_le64(p + 24);
        if (block >= MAN_STORE_BLOCK_V3)
            m->max_memories = get_le64(p + 32);
        if (block >= MAN_STORE_BLOCK_V4) {
            m->retain.memories = get_le32(p + 40);
            m->retain.grace_ms = get_le64(p + 48);
            m->dropped_upto = get_le64(p + 56);
            m->retain.events_max_age_ms = get_le64(p + 64);
            m->retain.events_max_bytes = get_le64(p + 72);
            if (m->dropped_upto >= MAN_SEQ_MAX || get_le32(p + 44) != 0 ||
                !cairn__retention_ok(&m->retain))
                return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: bad retention at offset %u",
                                   FILEHDR_SIZE + 40);
        }
        if (block >= MAN_STORE_BLOCK_V6) {
            m->label_rule = get_le32(p + 88);
            m->reflect_threshold = get_le32(p + 92);
            m->core_budget = get_le32(p + 96);
            m->core_section_budget = get_le32(p + 100);
            if ((m->label_rule != MAN_LABELS_EXACT && m->label_rule != MAN_LABELS_FOLDED) ||
                !cairn__tier_settings_ok(m->reflect_threshold, m->core_budget, m->core_section_budget))
                return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: bad label rule or tier settings "
                                   "at offset %u", FILEHDR_SIZE + 88);
        }
        if (block >= MAN_STORE_BLOCK_V5) {
            m->deaths_dropped = get_le64(p + 80);
            if (m->deaths_dropped >= MAN_SEQ_MAX)
                return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: deaths_dropped at offset %u "
                                   "out of range", FILEHDR_SIZE + 80);
        }
        /* far below 2^64, so no seq derived from them can wrap */
        if (m->synced_seq >= MAN_SEQ_MAX || m->lost_total >= MAN_SEQ_MAX)
            return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: synced_seq or lost count at offset "
                               "%u out of range", FILEHDR_SIZE + 16);
        if (cairn__store_id_is_zero(m->store_id))
            return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: store id is zero");
    }
    m->generation = get_le64(buf + 16);
    m->next_id = get_le64(buf + 24);
    m->segment_size = get_le64(buf + 32);
    m->batch_ms = get_le32(buf + 40);
    m->durability = buf[44];
    if (m->batch_ms == 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: batch_ms 0");
    if (m->segment_size < 4096 || m->segment_size > (1ull << 32))
        return cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: segment size %llu out of range",
                           (unsigned long long)m->segment_size);
    m->e = cairn__calloc(a, count ? count : 1, sizeof *m->e);
    if (m->e == NULL)
        return cairn__fail(e, CAIRN_ENOMEM, "MANIFEST: no memory");
    m->n = count;
    p = buf + FILEHDR_SIZE + block;
    for (uint32_t i = 0; i < count; i++, p += esize) {
        manifest_entry *x = &m->e[i];
        uint8_t flags = m->version >= 8 ? p[9] : 0;
        int zero_chain = 1;
        for (size_t k = 56; k < esize; k++)
            zero_chain &= p[k] == 0;
        if ((m->version >= 8 ? flags & ~MAN_ENTRY_CHAINED : p[9]) | p[10] | p[11] |
            (m->version < 4 ? p[12] | p[13] | p[14] | p[15] : 0) ||
            (!(flags & MAN_ENTRY_CHAINED) && !zero_chain) ||
            ((flags & MAN_ENTRY_CHAINED) && p[8] != SEG_SEALED)) {
            rc = cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: entry %u: reserved bytes not zero", i);
            goto fail;
        }
        x->id = get_le64(p);
        x->kind = p[8];
        x->rev = m->version >= 4 ? get_le32(p + 12) : 0;
        x->base_seq = get_le64(p + 16);
        x->last_seq = get_le64(p + 24);
        x->count = get_le64(p + 32);
        x->first_ts = (int64_t)get_le64(p + 40);
        x->last_ts = (int64_t)get_le64(p + 48);
        x->chained = (flags & MAN_ENTRY_CHAINED) != 0;
        if (x->chained)
            memcpy(x->chain, p + 56, sizeof x->chain);
    }
    if (n_types > 0 && (m->types = cairn__calloc(a, n_types, sizeof *m->types)) == NULL) {
        rc = cairn__fail(e, CAIRN_ENOMEM, "MANIFEST: no memory");
        goto fail;
    }
    for (uint32_t i = 0; i < n_types; i++, p += MAN_TYPE_SIZE) {
        manifest_type *t = &m->types[i];
        uint8_t l = p[2], z = p[3] | p[4] | p[5] | p[6] | p[7];
        for (size_t k = 8u + l; k < MAN_TYPE_SIZE; k++)
            z |= p[k];
        t->type = get_le16(p);
        if (l == 0 || l > CAIRN_TYPE_NAME_MAX || z != 0 || t->type < CAIRN_REC_USER_MIN ||
            (i > 0 && t->type <= m->types[i - 1].type) || !cairn__type_name_ok((const char *)p + 8, l)) {
            rc = cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: named type %u at offset %zu is not "
                             "valid", i, (size_t)(p - buf));
            goto fail;
        }
        memcpy(t->name, p + 8, l);
        t->name[l] = 0;
        for (uint32_t k = 0; k < i; k++)
            if (strcmp(m->types[k].name, t->name) == 0) {
                rc = cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: type name %s twice", t->name);
                goto fail;
            }
        m->n_types = i + 1;
    }
    if (n_files > 0 && (m->files = cairn__calloc(a, n_files, sizeof *m->files)) == NULL) {
        rc = cairn__fail(e, CAIRN_ENOMEM, "MANIFEST: no memory");
        goto fail;
    }
    for (uint32_t i = 0; i < n_files; i++, p += MAN_FILE_SIZE) {
        manifest_file *f = &m->files[i];
        f->kind = p[0];
        f->seq = get_le64(p + 8);
        f->len = get_le64(p + 16);
        f->sum = get_le64(p + 24);
        /* by kind then seq, each once; a file holds at least its header */
        if (f->kind < MAN_FILE_MEMINDEX || f->kind > MAN_FILE_GRAPHGEN ||
            (p[1] | p[2] | p[3] | p[4] | p[5] | p[6] | p[7]) != 0 || f->seq >= MAN_SEQ_MAX || f->len < FILEHDR_SIZE ||
            (i > 0 && (f->kind < m->files[i - 1].kind ||
                       (f->kind == m->files[i - 1].kind && f->seq <= m->files[i - 1].seq)))) {
            rc = cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: derived file %u at offset %zu is not "
                             "valid", i, (size_t)(p - buf));
            goto fail;
        }
        m->n_files = i + 1;
    }
    rc = check_entries(m, e);
    if (rc == CAIRN_OK)
        return CAIRN_OK;
fail:
    cairn__manifest_free(a, m);
    return rc;
}

int cairn__manifest_write(const cairn_io *io, int dirfd, const manifest *m,
                          const cairn_allocator *a, cairn__err *e)
{
    static const cairn__publish_sites sites = {"manifest.fsync", "manifest.close",
                                               "manifest.rename", "manifest.dirsync"};
    uint8_t *buf = NULL;
    size_t len;
    int fd = -1, rc;

    rc = cairn__manifest_encode(m, a, &buf, &len);
    if (rc != CAIRN_OK)
        return cairn__fail(e, rc, "MANIFEST: %s", rc == CAIRN_ENOMEM ? "no memory to encode"
                                                                     : "the store has no id");
    rc = cairn__io_open(io, "manifest.open", dirfd, MANIFEST_TMP, O_WRONLY | O_CREAT | O_TRUNC,
                        0644, &fd, e);
    if (rc != CAIRN_OK)
        goto cleanup;
    rc = cairn__io_write(io, "manifest.write", fd, buf, len, 0, MANIFEST_TMP, e);
    rc = cairn__io_publish(io, &sites, rc, fd, dirfd, MANIFEST_TMP, MANIFEST_NAME, e);
cleanup:
    cairn__free(a, buf);
    return rc;
}

int cairn__manifest_read(const cairn_io *io, int dirfd, const cairn_allocator *a, manifest *m,
                         cairn__err *e)
{
    struct stat st;
    uint8_t *buf = NULL;
    size_t got;
    int fd = -1, rc;

    rc = cairn__io_open(io, "manifest.read", dirfd, MANIFEST_NAME, O_RDONLY, 0, &fd, e);
    if (rc != CAIRN_OK)
        return rc;
    if (fstat(fd, &st) != 0 ||
        st.st_size > (off_t)(FILEHDR_SIZE + MAN_STORE_BLOCK + 8 +
                             (uint64_t)MAN_MAX_ENTRIES * MAN_ENTRY_SIZE +
                             (uint64_t)MAN_TYPES_MAX * MAN_TYPE_SIZE +
                             (uint64_t)MAN_FILES_MAX * MAN_FILE_SIZE)) {
        rc = cairn__fail(e, CAIRN_ECORRUPT, "MANIFEST: unreadable size");
        goto cleanup;
    }
    buf = cairn__malloc(a, (size_t)st.st_size);
    if (buf == NULL) {
        rc = cairn__fail(e, CAIRN_ENOMEM, "MANIFEST: no memory");
        goto cleanup;
    }
    rc = cairn__io_read(io, "manifest.read", fd, buf, (size_t)st.st_size, 0, &got,
                        MANIFEST_NAME, e);
    if (rc == CAIRN_OK)
        rc = cairn__manifest_decode(buf, got, a, m, e);
    /* Before version 9 the directory was the list of derived files. */
    if (rc == CAIRN_OK && m->version < 9) {
        rc = cairn__derived_scan(io, dirfd, a, &m->files, &m->n_files, e);
        if (rc != CAIRN_OK)
            cairn__manifest_free(a, m);
    }
cleanup:
    cairn__io_close(io, "manifest.close", fd);
    cairn__free(a, buf);
    return rc;
}

int cairn__manifest_file_cmp(const manifest_file *a, const manifest_file *b)
{
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int file_order(const void *x, const void *y)
{
    return cairn__manifest_file_cmp(x, y);
}

int cairn__derived_scan(const cairn_io *io, int dirfd, const cairn_allocator *a,
                        manifest_file **out, size_t *n, cairn__err *e)
{
    DIR *d = cairn__io_opendir(dirfd);
    struct dirent *de;
    manifest_file *f = NULL;
    size_t have = 0, cap = 0;

    *out = NULL;
    *n = 0;
    if (d == NULL)
        return cairn__fail(e, CAIRN_EIO, "read the store directory: %s", strerror(errno));
    while ((de = readdir(d)) != NULL) {
        for (size_t k = 0; k < SEQFILE_KINDS; k++) {
            const cairn__seqfile_kind *kind = cairn__seqfile_kinds[k];
            uint8_t h[FILEHDR_SIZE];
            struct stat st;
            size_t got = 0;
            uint64_t seq;
            int fd;
            if (!cairn__seqfile_parse(kind, de->d_name, &seq) || seq >= MAN_SEQ_MAX ||
                have >= MAN_FILES_MAX)
                continue;
            if (cairn__io_open(io, kind->site_open, dirfd, de->d_name, O_RDONLY, 0, &fd, NULL) !=
                CAIRN_OK)
                continue; /* gone meanwhile, or a symlink: not listed */
            if (fstat(fd, &st) != 0 || st.st_size < (off_t)FILEHDR_SIZE ||
                cairn__io_read(io, kind->site_open, fd, h, sizeof h, 0, &got, de->d_name, NULL) !=
                    CAIRN_OK ||
                got != sizeof h) {
                cairn__io_close(io, kind->site_close, fd);
                continue;
            }
            cairn__io_close(io, kind->site_close, fd);
            if (have == cap) {
                manifest_file *g = cairn__realloc(a, f, (cap = cap ? 2 * cap : 8) * sizeof *f);
                if (g == NULL) {
                    closedir(d);
                    cairn__free(a, f);
                    return cairn__fail(e, CAIRN_ENOMEM, "no memory to list the derived files");
                }
                f = g;
            }
            f[have].kind = kind->code;
            f[have].seq = seq;
            f[have].len = (uint64_t)st.st_size;
            f[have].sum = get_le64(h + FILEHDR_OFF_SUM);
            have++;
        }
    }
    closedir(d);
    if (have > 1)
        qsort(f, have, sizeof *f, file_order);
    *out = f;
    *n = have;
    return CAIRN_OK;
}

const manifest_file *cairn__manifest_file(const manifest *m, uint8_t kind, uint64_t seq)
{
    for (size_t i = 0; i < m->n_files; i++)
        if (m->files[i].kind == kind && m->files[i].seq == seq)
            return &m->files[i];
    return NULL;
}

int cairn__retention_ok(const cairn_retention *r)
{
    return r->memories <= CAIRN_RETAIN_LIVE && r->grace_ms <= CAIRN_RETAIN_GRACE_MAX &&
           (r->memories == CAIRN_RETAIN_LIVE || r->grace_ms == 0) &&
           r->events_max_age_ms <= CAIRN_RETAIN_GRACE_MAX &&
           r->events_max_bytes <= CAIRN_RETAIN_GRACE_MAX;
}

int cairn__store_id_is_zero(const uint8_t *id)
{
    uint8_t any = 0;
    for (unsigned i = 0; i < MAN_STORE_ID_LEN; i++)
        any |= id[i];
    return any == 0;
}

int cairn__manifest_copy(const manifest *src, const cairn_allocator *a, manifest *dst)
{
    *dst = *src;
    dst->types = NULL;
    dst->files = NULL;
    dst->e = cairn__calloc(a, src->n ? src->n : 1, sizeof *dst->e);
    if (dst->e == NULL)
        return CAIRN_ENOMEM;
    /* one more slot: a publish adds to a copy */
    if ((dst->files = cairn__calloc(a, src->n_files + 1, sizeof *dst->files)) == NULL) {
        cairn__free(a, dst->e);
        dst->e = NULL;
        return CAIRN_ENOMEM;
    }
    if (src->n_files)
        memcpy(dst->files, src->files, src->n_files * sizeof *dst->files);
    if (src->n)
        memcpy(dst->e, src->e, src->n * sizeof *dst->e);
    if (src->n_types > 0) {
        /* one more slot: a registration adds to a copy */
        if ((dst->types = cairn__calloc(a, src->n_types + 1, sizeof *dst->types)) == NULL) {
            cairn__free(a, dst->e);
            cairn__free(a, dst->files);
            dst->e = NULL;
            dst->files = NULL;
            return CAIRN_ENOMEM;
        }
        memcpy(dst->types, src->types, src->n_types * sizeof *dst->types);
    }
    return CAIRN_OK;
}

void cairn__manifest_free(const cairn_allocator *a, manifest *m)
{
    cairn__free(a, m->e);
    cairn__free(a, m->types);
    cairn__free(a, m->files);
    m->e = NULL;
    m->types = NULL;
    m->files = NULL;
    m->n = 0;
    m->n_types = 0;
    m->n_files = 0;
}

int cairn__type_name_ok(const char *name, size_t len)
{
    uint16_t t;
    char buf[CAIRN_TYPE_NAME_MAX + 1];
    if (len == 0 || len > CAIRN_TYPE_NAME_MAX || !(name[0] >= 'a' && name[0] <= 'z'))
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
            return 0;
    }
    memcpy(buf, name, len);
    buf[len] = 0;
    return cairn_record_type_parse(buf, &t) != CAIRN_OK; /* not the engine's */
}
