/*
 * seqfile.c - see seqfile.h.
 */
#include "seqfile.h"

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

#include "io.h"

const cairn__seqfile_kind cairn__seqfile_memindex = {"mem-", ".cmx", "memindex.open",
                                                      "memindex.close", "memindex.unlink"};
const cairn__seqfile_kind cairn__seqfile_graph = {"graph-", ".cgx", "graph.open", "graph.close",
                                                   "graph.unlink"};
const cairn__seqfile_kind cairn__seqfile_graphgen = {"graph-", ".cgg", "graphgen.open",
                                                      "graphgen.close", "graphgen.unlink"};

int cairn__seqfile_parse(const cairn__seqfile_kind *k, const char *n, uint64_t *seq)
{
    size_t pl = strlen(k->prefix), sl = strlen(k->suffix);
    char *end;
    if (strlen(n) != pl + 16 + sl || strncmp(n, k->prefix, pl) != 0 ||
        strcmp(n + pl + 16, k->suffix) != 0)
        return 0;
    for (size_t i = pl; i < pl + 16; i++)
        if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
            return 0;
    *seq = strtoull(n + pl, &end, 16);
    return end == n + pl + 16;
}

static int lower(char c)
{
    return c >= 'a' && c <= 'z';
}

int cairn__seqfile_is_temp(const char *n)
{
    size_t len = strlen(n), i = 0, j;
    if (len < 4 || strcmp(n + len - 4, ".tmp") != 0)
        return 0;
    len -= 4;
    while (i < len && lower(n[i]))
        i++;
    if (i == 0 || i >= len || n[i] != '-')
        return 0;
    i++; /* past the prefix */
    for (j = i; j < i + 16; j++)
        if (j >= len || !((n[j] >= '0' && n[j] <= '9') || (n[j] >= 'a' && n[j] <= 'f')))
            return 0;
    if (j >= len || n[j] != '.')
        return 0;
    /* a merger's: .<16 hex> before .tmp */
    if (len - j > 18 && n[len - 17] == '.') {
        for (size_t h = len - 16; h < len; h++)
            if (!((n[h] >= '0' && n[h] <= '9') || (n[h] >= 'a' && n[h] <= 'f')))
                return 0;
        len -= 17;
    }
    if (len - j - 1 < 1 || len - j - 1 > 8)
        return 0;
    for (j++; j < len; j++)
        if (!lower(n[j]))
            return 0;
    return 1;
}

void cairn__seqfile_temp(const cairn__seqfile_kind *k, uint64_t seq, uint64_t salt, char *out,
                         size_t cap)
{
    if (salt == 0)
        snprintf(out, cap, "%s%016" PRIx64 "%s.tmp", k->prefix, seq, k->suffix);
    else
        snprintf(out, cap, "%s%016" PRIx64 "%s.%016" PRIx64 ".tmp", k->prefix, seq, k->suffix,
                 salt);
}

void cairn__seqfile_name(const cairn__seqfile_kind *k, uint64_t seq, char *out, size_t cap)
{
    snprintf(out, cap, "%s%016" PRIx64 "%s", k->prefix, seq, k->suffix);
}

/* The newest name with seq <= max_seq into best; 1 found, 0 none, -1 error. */
static int newest(const cairn__seqfile_kind *k, int dirfd, uint64_t max_seq, char *best,
                  size_t cap, uint64_t *best_seq)
{
    int found = 0;
    DIR *d = cairn__io_opendir(dirfd);
    struct dirent *de;

    if (d == NULL)
        return -1;
    while ((de = readdir(d)) != NULL) {
        uint64_t c;
        if (cairn__seqfile_parse(k, de->d_name, &c) && c <= max_seq && strlen(de->d_name) < cap &&
            (!found || c > *best_seq)) {
            *best_seq = c;
            strcpy(best, de->d_name);
            found = 1;
        }
    }
    closedir(d);
    return found;
}

int cairn__seqfile_map(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd,
                       uint64_t max_seq, char *name, size_t cap, uint64_t *seq, uint8_t **map,
                       size_t *len, size_t min_len, cairn__err *e)
{
    struct stat st;
    int fd, rc, found;
    void *p;

    *map = NULL;
    *len = 0;
    /* A writer replaces the file by renaming a newer one in, then removing
     * the old: a name read just before may be gone. Look again. */
    for (int tries = 0;; tries++) {
        found = newest(k, dirfd, max_seq, name, cap, seq);
        if (found < 0)
            return cairn__fail(e, CAIRN_EIO, "read the store directory: %s", strerror(errno));
        if (found == 0)
            return CAIRN_ENOTFOUND;
        rc = cairn__io_open(io, k->site_open, dirfd, name, O_RDONLY, 0, &fd, e);
        if (rc == CAIRN_OK)
            break;
        if (rc != CAIRN_ENOTFOUND || tries == 2)
            return rc == CAIRN_ENOTFOUND ? CAIRN_EIO : rc;
    }
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < min_len) {
        cairn__io_close(io, k->site_close, fd);
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: too short", name);
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    cairn__io_close(io, k->site_close, fd);
    if (p == MAP_FAILED)
        return cairn__fail(e, CAIRN_EIO, "mmap %s: %s", name, strerror(errno));
    *map = p;
    *len = (size_t)st.st_size;
    return CAIRN_OK;
}

void cairn__seqfile_remove_older(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd,
                                 const char *keep)
{
    uint64_t c = 0;
    (void)cairn__seqfile_parse(k, keep, &c);
    cairn__seqfile_remove_except(k, io, dirfd, &c, 1);
}

void cairn__seqfile_remove_except(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd,
                                  const uint64_t *keep, size_t n_keep)
{
    size_t pl = strlen(k->prefix), sl = strlen(k->suffix);
    DIR *d = cairn__io_opendir(dirfd);
    struct dirent *de;
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        uint64_t c = 0;
        size_t n = strlen(de->d_name);
        int kept = 0;
        int tmp = n == pl + 16 + sl + 4 && strncmp(de->d_name, k->prefix, pl) == 0 &&
                  strcmp(de->d_name + n - 4, ".tmp") == 0 &&
                  strncmp(de->d_name + pl + 16, k->suffix, sl) == 0;
        if (tmp) { /* NAME.tmp: its seq is NAME's */
            char base[64];
            snprintf(base, sizeof base, "%.*s", (int)(n - 4), de->d_name);
            if (!cairn__seqfile_parse(k, base, &c))
                continue;
        } else if (!cairn__seqfile_parse(k, de->d_name, &c)) {
            continue;
        }
        for (size_t i = 0; i < n_keep && !kept; i++)
            kept = keep[i] == c;
        if (!kept)
            (void)cairn__io_unlink(io, k->site_unlink, dirfd, de->d_name, NULL);
    }
    closedir(d);
}

uint64_t cairn__seqfile_newest(const cairn__seqfile_kind *k, int dirfd)
{
    DIR *d = cairn__io_opendir(dirfd);
    struct dirent *de;
    uint64_t best = 0, c;
    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL)
        if (cairn__seqfile_parse(k, de->d_name, &c) && c > best)
            best = c;
    closedir(d);
    return best;
}

size_t cairn__seqfile_list(const cairn__seqfile_kind *k, int dirfd, uint64_t *out, size_t cap)
{
    DIR *d = cairn__io_opendir(dirfd);
    struct dirent *de;
    size_t n = 0;
    uint64_t c;
    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL)
        if (cairn__seqfile_parse(k, de->d_name, &c)) {
            if (n < cap)
                out[n] = c;
            n++;
        }
    closedir(d);
    return n;
}

void cairn__seqfile_remove_from(const cairn__seqfile_kind *k, const cairn_io *io, int dirfd,
                                uint64_t from_seq)
{
    DIR *d = cairn__io_opendir(dirfd);
    struct dirent *de;
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        char base[64];
        size_t n = strlen(de->d_name);
        uint64_t c;
        /* NAME or NAME.tmp */
        if (n >= sizeof base)
            continue;
        memcpy(base, de->d_name, n + 1);
        if (n > 4 && strcmp(base + n - 4, ".tmp") == 0)
            base[n - 4] = 0;
        if (cairn__seqfile_parse(k, base, &c) && c >= from_seq)
            (void)cairn__io_unlink(io, k->site_unlink, dirfd, de->d_name, NULL);
    }
    closedir(d);
}
