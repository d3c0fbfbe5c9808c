/*
 * boot.h - which boot of the machine this is.
 *
 * A derived file written without an fsync (a close's small index file:
 * format-spec/memindex.md, "Files written without a sync") is exact for
 * as long as the kernel that holds its pages runs: every process reads
 * them from the one page cache, and a process killed after the rename
 * leaves them whole. Only a crash of the machine (power, kernel) can leave
 * such a file torn on disk, and it also starts a new boot. So the file
 * names the boot it was written in, and a reader in another boot sets it
 * aside and replays its records from the log.
 */
#ifndef CAIRN_BOOT_H
#define CAIRN_BOOT_H

#include <stdint.h>

/* A 64-bit id of this boot, never 0 (Linux: a hash of
 * /proc/sys/kernel/random/boot_id). 0 when it cannot be known: then no
 * file is written without its sync. */
uint64_t cairn__boot_id(void);

/* Tests: act as if the machine had restarted into boot `id` (0: back to
 * the real one). */
void cairn__boot_id_set(uint64_t id);

#endif /* CAIRN_BOOT_H */
