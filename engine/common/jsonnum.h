/*
 * jsonnum.h - JSON number text through the C library, whatever the
 * process's locale. strtod and printf follow LC_NUMERIC, and an
 * application embedding cairn may run where the decimal point is ','.
 * JSON's is always '.': these swap it both ways, as cJSON does.
 */
#ifndef CAIRN_JSONNUM_H
#define CAIRN_JSONNUM_H

#include <stddef.h>

/* strtod of the JSON number text in s (NUL-terminated, writable: its '.'
 * becomes the locale's point first). */
double cairn__json_strtod(char *s);

/* Format v with printf's fmt (one double conversion, such as "%.17g")
 * into b (cap bytes), with '.' for the decimal point. Returns snprintf's
 * length. */
int cairn__json_fmt(char *b, size_t cap, const char *fmt, double v);

#endif /* CAIRN_JSONNUM_H */
