/*
 * replay_main.c - the corpus replay driver: a plain main() that feeds files
 * to a fuzz target's LLVMFuzzerTestOneInput() without libFuzzer, so the
 * corpora run under gcc (and under ASan/UBSan) as part of `make test`.
 *
 * Usage: replay_fuzz_<target> PATH...   (files, or directories walked
 * recursively in name order; dot files are skipped). Each file is read into
 * a heap buffer of exactly its size, so a read past the end is caught by the
 * sanitizers. Prints "replayed N inputs" and exits 0; a file or directory
 * that cannot be read is reported and makes the exit status 1. An invariant
 * broken inside a target aborts, which also fails the run.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static unsigned long replayed;
static int errors;

static void complain(const char *path, const char *what)
{
    fprintf(stderr, "replay: %s: %s: %s\n", path, what, strerror(errno));
    errors++;
}

static void replay_file(const char *path, size_t size_hint)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    size_t got;

    if (f == NULL) {
        complain(path, "open");
        return;
    }
    buf = malloc(size_hint ? size_hint : 1);
    if (buf == NULL) {
        fclose(f);
        complain(path, "malloc");
        return;
    }
    got = fread(buf, 1, size_hint, f);
    if (got != size_hint || ferror(f)) {
        errno = errno ? errno : EIO;
        complain(path, "read");
    } else {
        /* An exact-size copy: the buffer ends where the input does. */
        LLVMFuzzerTestOneInput(buf, got);
        replayed++;
    }
    free(buf);
    fclose(f);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_path(const char *path);

static void replay_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0;

    if (d == NULL) {
        complain(path, "opendir");
        return;
    }
    errno = 0;
    while ((de = readdir(d)) != NULL) {
        size_t len;
        char *full;
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn = realloc(names, (cap ? cap * 2 : 64) * sizeof *nn);
            if (nn == NULL) {
                complain(path, "realloc");
                break;
            }
            names = nn;
            cap = cap ? cap * 2 : 64;
        }
        len = strlen(path) + strlen(de->d_name) + 2;
        full = malloc(len);
        if (full == NULL) {
            complain(path, "malloc");
            break;
        }
        snprintf(full, len, "%s/%s", path, de->d_name);
        names[n++] = full;
        errno = 0;
    }
    if (de == NULL && errno != 0)
        complain(path, "readdir");
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        replay_path(names[i]);
        free(names[i]);
    }
    free(names);
}

static void replay_path(const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        complain(path, "stat");
        return;
    }
    if (S_ISDIR(st.st_mode))
        replay_dir(path);
    else if (S_ISREG(st.st_mode))
        replay_file(path, (size_t)st.st_size);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        replay_path(argv[i]);
    printf("replayed %lu inputs%s\n", replayed, errors ? " (with read errors)" : "");
    return errors ? 1 : 0;
}
