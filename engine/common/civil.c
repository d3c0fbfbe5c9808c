/*
 * civil.c - see civil.h.
 */
#include "civil.h"

#include <stdio.h>

int64_t cairn__days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe, doy, doe;
    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void cairn__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t era;
    unsigned doe, yoe, doy, mp;
    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = (unsigned)(z - era * 146097);
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void cairn__iso_time(int64_t ms, char *buf, size_t len)
{
    int64_t secs = ms / 1000, rem = ms % 1000, days, sod, y;
    unsigned mo, d;

    if (rem < 0) {
        rem += 1000;
        secs--;
    }
    days = secs / 86400;
    sod = secs % 86400;
    if (sod < 0) {
        sod += 86400;
        days--;
    }
    cairn__civil_from_days(days, &y, &mo, &d);
    snprintf(buf, len, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ", (long long)y, mo, d,
             (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60), (int)rem);
}
