/*
 * testutil.c - see testutil.h.
 */
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "alloc.h"
#include "bytes.h"
#include "filehdr.h"
#include "manifest.h"
#include "store.h"

char *tu_mkdtemp(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char *p = malloc(4096);
    if (p == NULL)
        return NULL;
    snprintf(p, 4096, "%s/cairn-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (mkdtemp(p) == NULL) {
        free(p);
        return NULL;
    }
    return p;
}

void tu_rmrf(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *de;
    if (d == NULL) {
        unlink(path);
        return;
    }
    while ((de = readdir(d)) != NULL) {
        char *sub;
        struct stat st;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        sub = tu_join(path, de->d_name);
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
            tu_rmrf(sub);
        else
            unlink(sub);
        free(sub);
    }
    closedir(d);
    rmdir(path);
}

char *tu_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p != NULL)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

uint8_t *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long n;
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf != NULL)
        *len = (size_t)n;
    return buf;
}

int tu_write_file(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    int rc;
    if (f == NULL)
        return -1;
    rc = fwrite(buf, 1, len, f) == len ? 0 : -1;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

long long tu_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

char *tu_find_last(const char *dir, const char *ext)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char best[256] = "";
    size_t el = strlen(ext);
    if (d == NULL)
        return NULL;
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n > el && strcmp(de->d_name + n - el, ext) == 0 && strcmp(de->d_name, best) > 0 &&
            n < sizeof best)
            strcpy(best, de->d_name);
    }
    closedir(d);
    return best[0] ? tu_join(dir, best) : NULL;
}

uint64_t tu_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int tu_open_small(const char *dir, int background, cairn_db **db, char *err, size_t cap)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    o.create = 1;
    o.background = background;
    o.durability = CAIRN_DURABILITY_NONE;
    o.segment_size = 4096;
    return cairn_open(db, dir, &o, err, cap);
}

int tu_comma_numeric(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8' >/dev/null 2>&1", dir);
    if (system(cmd) != 0) {
        /* localedef may warn (status 1) and still write the locale: try it */
    }
    setenv("LOCPATH", dir, 1);
    return setlocale(LC_NUMERIC, "de_DE.UTF-8") != NULL && localeconv()->decimal_point[0] == ',';
}

void tu_c_numeric(void)
{
    setlocale(LC_NUMERIC, "C");
    unsetenv("LOCPATH");
}

int tu_folds_while_held(const tu_held_turn *h)
{
    cairn_stats st;
    pthread_t th;
    long long until;
    int got;

    if (cairn__turn_begin(h->holder) != CAIRN_OK)
        return 0;
    h->fill(h->user);
    if (cairn_stats_get(h->holder, &st) != CAIRN_OK || h->folded(h->user) >= st.last_seq ||
        pthread_create(&th, NULL, h->wait, h->user) != 0) {
        (void)cairn__turn_end(h->holder);
        return 0;
    }
    until = tu_now_ms() + 10000;
    while (h->folded(h->user) < st.last_seq && tu_now_ms() < until)
        tu_sleep_ms(1);
    got = h->folded(h->user) >= st.last_seq;
    (void)cairn__turn_end(h->holder);
    pthread_join(th, NULL);
    return got;
}

long long tu_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void tu_sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

int tu_wait_child(int pid, long timeout_ms)
{
    long long until = tu_now_ms() + timeout_ms;
    int st;
    for (;;) {
        pid_t r = waitpid((pid_t)pid, &st, WNOHANG);
        if (r == (pid_t)pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if (r < 0 && errno != EINTR)
            return -1;
        if (tu_now_ms() > until) {
            kill((pid_t)pid, SIGKILL);
            waitpid((pid_t)pid, &st, 0);
            return -1;
        }
        tu_sleep_ms(2);
    }
}

uint8_t *tu_manifest_as_version(const uint8_t *b, size_t len, unsigned version,
                                size_t *out_len)
{
    size_t block = version >= 7   ? MAN_STORE_BLOCK
                   : version == 6 ? MAN_STORE_BLOCK_V6
                   : version == 5 ? MAN_STORE_BLOCK_V5
                   : version == 4 ? MAN_STORE_BLOCK_V4
                   : version == 3 ? MAN_STORE_BLOCK_V3
                   : version == 2 ? MAN_STORE_BLOCK_V2
                                  : 0;
    /* the entries (56 bytes before version 8: no chain value); the named
     * types after them are kept in version 7 and left out before it */
    size_t count = get_le32(b + 48), esize = version >= 8 ? MAN_ENTRY_SIZE : MAN_ENTRY_SIZE_V7;
    size_t from = FILEHDR_SIZE + MAN_STORE_BLOCK + count * MAN_ENTRY_SIZE;
    size_t types = version >= 7 ? len - 8 - from : 0, n;
    uint8_t *v;

    n = FILEHDR_SIZE + block + count * esize + types + 8;
    v = calloc(1, n);
    if (get_le16(b + 8) != MAN_VERSION || v == NULL) {
        fprintf(stderr, "tu_manifest_as_version: not a version %u MANIFEST\n", MAN_VERSION);
        abort();
    }
    memcpy(v, b, FILEHDR_SIZE + block);
    put_le32(v + 52, (uint32_t)esize);
    for (size_t i = 0; i < count; i++) {
        uint8_t *at = v + FILEHDR_SIZE + block + i * esize;
        memcpy(at, b + FILEHDR_SIZE + MAN_STORE_BLOCK + i * MAN_ENTRY_SIZE, esize);
        if (version < 8)
            at[9] = 0; /* no chain flag before version 8 */
        if (version < 4)
            memset(at + 12, 0, 4); /* no rev before version 4 */
    }
    memcpy(v + FILEHDR_SIZE + block + count * esize, b + from, types);
    put_le16(v + 8, (uint16_t)version);
    put_le64(v + 56, XXH3_64bits(v, 56));
    put_le64(v + n - 8, XXH3_64bits(v, n - 8));
    *out_len = n;
    return v;
}

void tu_manifest_file_as_version(const char *store, unsigned version)
{
    char *man = tu_join(store, "MANIFEST");
    size_t len, vlen;
    uint8_t *b = tu_read_file(man, &len), *v;
    if (b == NULL) {
        fprintf(stderr, "tu_manifest_file_as_version: cannot read %s\n", man);
        abort();
    }
    v = tu_manifest_as_version(b, len, version, &vlen);
    if (tu_write_file(man, v, vlen) != 0) {
        fprintf(stderr, "tu_manifest_file_as_version: cannot write %s\n", man);
        abort();
    }
    free(v);
    free(b);
    free(man);
}

int tu_copy_dir(const char *src, const char *dst)
{
    DIR *d = opendir(src);
    struct dirent *de;
    int rc = 0;
    if (d == NULL || (mkdir(dst, 0755) != 0 && errno != EEXIST)) {
        if (d != NULL)
            closedir(d);
        return -1;
    }
    while (rc == 0 && (de = readdir(d)) != NULL) {
        char *from, *to;
        uint8_t *b;
        size_t len;
        struct stat st;
        if (de->d_name[0] == '.')
            continue;
        from = tu_join(src, de->d_name);
        to = tu_join(dst, de->d_name);
        if (stat(from, &st) == 0 && S_ISREG(st.st_mode)) {
            b = tu_read_file(from, &len);
            rc = b == NULL || tu_write_file(to, b, len) != 0 ? -1 : 0;
            free(b);
        }
        free(from);
        free(to);
    }
    closedir(d);
    return rc;
}

int tu_relist(const char *dir)
{
    manifest m;
    cairn__err e;
    int rc, dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dirfd < 0)
        return -1;
    rc = cairn__manifest_read(cairn_io_default(), dirfd, NULL, &m, &e);
    if (rc == CAIRN_OK) {
        cairn__free(NULL, m.files);
        rc = cairn__derived_scan(cairn_io_default(), dirfd, NULL, &m.files, &m.n_files, &e);
        m.generation++;
        if (rc == CAIRN_OK)
            rc = cairn__manifest_write(cairn_io_default(), dirfd, &m, NULL, &e);
        cairn__manifest_free(NULL, &m);
    }
    close(dirfd);
    return rc == CAIRN_OK ? 0 : -1;
}
