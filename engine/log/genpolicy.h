/*
 * genpolicy.h - when the files of a derived file's chain merge: one
 * policy for the memory index and the graph generations
 * (format-spec/memindex.md and graph.md, "Generations").
 *
 * A chain is a list of files, oldest first, each lying on the one before
 * it; rows[i] is file i's row count. The rules read those counts alone
 * (the files' headers), never the files.
 *
 * - A file written on the caller's time (a checkpoint, a close) takes in,
 *   newest first, every file that holds at most `ratio` times the rows
 *   gathered so far, and as many more as keep the chain within `max`
 *   files. Below a chain that was never full, each file then holds more
 *   than `ratio` times the next one, so a chain has about
 *   log(rows / smallest file) files and a row is rewritten that many times
 *   over its life. With ratio 1 and files of one row each, the chain is
 *   the binary number of the rows: a file for each bit set.
 * - A merger thread merges the newest run of at least `fanin` files of
 *   about one size (each within `ratio` times every other of the run),
 *   anywhere in the chain: tiered, so that a long ingest beside it writes
 *   each row about log_fanin(rows / flush) times; or, when one more file
 *   would fill the chain, the two newest.
 */
#ifndef CAIRN_GENPOLICY_H
#define CAIRN_GENPOLICY_H

#include <stddef.h>
#include <stdint.h>

/* The first file of rows[0..n) a new file of `fresh` rows takes in (n:
 * none, it lies on them all; 0: all of them, a whole file), never one
 * below `keep` (the graph's whole file stays under its generations). The
 * new file then holds fresh plus the rows of the files it takes. */
size_t cairn__gen_take_from(const uint64_t *rows, size_t n, uint64_t fresh, unsigned ratio,
                            size_t max, size_t keep);

/* The run *j..*k of rows[0..n) the merger merges into one file; 0 when
 * none is due. */
int cairn__gen_tiered_run(const uint64_t *rows, size_t n, size_t fanin, unsigned ratio,
                          size_t max, size_t *j, size_t *k);

#endif
