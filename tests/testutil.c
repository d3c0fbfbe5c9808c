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
