/*
 * testutil.h - shared helpers of the cmocka suites: a fresh temporary
 * directory per test, recursive removal, and small file helpers.
 */
#ifndef CAIRN_TESTUTIL_H
#define CAIRN_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"

/* Open (creating it if missing) the small store the engine suites use:
 * durability none, 4 KiB segments (so a few records roll and seal), the
 * background thread as asked. cairn_open's code; its message in err. */
int tu_open_small(const char *dir, int background, cairn_db **db, char *err, size_t cap);

/* Create a fresh directory under $TMPDIR (or /tmp); returns a malloc'd path. */
char *tu_mkdtemp(const char *tag);
/* rm -rf path (ignores errors); frees nothing. */
void tu_rmrf(const char *path);
/* path + "/" + name in a static buffer per call site is unsafe: returns malloc'd. */
char *tu_join(const char *dir, const char *name);
/* Read a whole file; returns malloc'd bytes and *len, NULL on error. */
uint8_t *tu_read_file(const char *path, size_t *len);
/* Write bytes to a file (create/truncate); 0 on success. */
int tu_write_file(const char *path, const void *buf, size_t len);
/* The store at dir's MANIFEST listing the derived files its directory
 * holds now, as they are (a test that forged or planted one, to reach the
 * checks past the list's). 0 on success. */
int tu_relist(const char *dir);
/* Size of a file, or -1. */
long long tu_file_size(const char *path);
/* The name of the newest file in dir ending with ext (".log", ".seg"), malloc'd, or NULL. */
char *tu_find_last(const char *dir, const char *ext);

/* splitmix64: the next value of a deterministic stream kept in *state
 * (the suites' fixed-seed data). */
uint64_t tu_splitmix64(uint64_t *state);

/* For the suites that fork: a monotonic clock in ms, a sleep that
 * resumes after signals, and a bounded wait for a child. */
/* Make a locale whose decimal point is ',' (de_DE, compiled with localedef
 * into dir) the process's LC_NUMERIC: 1 if that worked. tu_c_numeric()
 * goes back to "C". */
int tu_comma_numeric(const char *dir);
void tu_c_numeric(void);

/* A writer that waits for the lock while another handle holds it: the
 * test's holder appends (fill), a thread runs the waiting call (wait,
 * which stores its own result), and the test watches how far the waiting
 * handle has folded (folded). */
typedef struct tu_held_turn {
    cairn_db *holder;
    void (*fill)(void *user);
    void *(*wait)(void *user);
    uint64_t (*folded)(void *user);
    void *user;
} tu_held_turn;

/* Hold the holder's turn, fill, start the waiting call, and give it up to
 * 10 s to fold everything the holder appended; then let the turn go and
 * join the thread. Returns 1 if the fold got there while the turn was
 * still held. */
int tu_folds_while_held(const tu_held_turn *h);

/* A MANIFEST of the newest version (b, len) as an earlier version wrote
 * it (1, 2 or 3): the store block cut to that version's size, no
 * compaction revisions, resealed. Malloc'd; *out_len its length. */
uint8_t *tu_manifest_as_version(const uint8_t *b, size_t len, unsigned version,
                                size_t *out_len);
/* The same for the store's MANIFEST file, in place. */
void tu_manifest_file_as_version(const char *store, unsigned version);

/* Copy the regular files of directory src into dst (created); 0 on
 * success. */
int tu_copy_dir(const char *src, const char *dst);

long long tu_now_ms(void);
void tu_sleep_ms(long ms);
/* Wait for child pid at most timeout_ms; kill it if it hangs. Its exit
 * status, or -1 if it had to be killed or died of a signal. */
int tu_wait_child(int pid, long timeout_ms);

#endif
