/*
 * jsonnum.c - see jsonnum.h.
 */
#include "jsonnum.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

static char locale_point(void)
{
    const struct lconv *l = localeconv();
    return l != NULL && l->decimal_point != NULL && l->decimal_point[0] ? l->decimal_point[0]
                                                                        : '.';
}

static void swap_point(char *s, char from, char to)
{
    if (from != to)
        for (; *s; s++)
            if (*s == from)
                *s = to;
}

double cairn__json_strtod(char *s)
{
    swap_point(s, '.', locale_point());
    return strtod(s, NULL);
}

int cairn__json_fmt(char *b, size_t cap, const char *fmt, double v)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    int n = snprintf(b, cap, fmt, v);
#pragma GCC diagnostic pop
    if (cap > 0)
        swap_point(b, locale_point(), '.');
    return n;
}
