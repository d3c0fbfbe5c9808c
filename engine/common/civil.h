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

#endif
