/*
 * civil.h - proleptic Gregorian dates <-> days since 1970-01-01, without
 * the C library's time zone state (H. Hinnant's algorithms).
 */
#ifndef CAIRN_CIVIL_H
#define CAIRN_CIVIL_H

#include <stdint.h>

/* Days since 1970-01-01 of y-m-d (m 1..12, d 1..31; not checked). */
int64_t cairn__days_from_civil(int64_t y, unsigned m, unsigned d);

/* The date of day z (days since 1970-01-01). */
void cairn__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

/* ms since the epoch as ISO 8601 UTC with milliseconds,
 * "2026-11-22T05:04:45.123Z", into buf (len bytes; 25 suffice). */
#include <stddef.h>
void cairn__iso_time(int64_t ms, char *buf, size_t len);
#endif
