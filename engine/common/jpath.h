/*
 * jpath.h - a small path syntax into a JSON document, and the test of a
 * value found there against one given on a command line. Used by
 * `cairn dump --where` (on a record's payload) and by recall's metadata
 * filters (cairn_recall_opts.where).
 *
 * A path is member names joined by '.', each may be followed by [N] for an
 * array element: tool.args[0].name. A name cannot hold '.', '[', '=', '<'
 * or '>'. An empty name ("a..b", ".a", "a.") matches nothing.
 */
#ifndef CAIRN_JPATH_H
#define CAIRN_JPATH_H

#include <stddef.h>

struct cJSON;

/* The member or element of o at path p[0..n), or NULL. */
const struct cJSON *cairn__jpath_get(const struct cJSON *o, const char *p, size_t n);

/* How a found value is compared with the wanted one. */
enum {
    CAIRN__JPATH_EQ = 0, /* equal as JSON; a plain-text want equals a string */
    CAIRN__JPATH_GE = 1, /* a number >= the wanted number */
    CAIRN__JPATH_LE = 2  /* a number <= the wanted number */
};

/* Does v satisfy op against want (JSON, or NULL with want_text: plain
 * text)? With in_array and op EQ, an array v also satisfies it when one of
 * its elements does (tags, issue numbers). NULL v satisfies nothing. */
int cairn__jpath_test(const struct cJSON *v, int op, const struct cJSON *want,
                      const char *want_text, int in_array);

#endif /* CAIRN_JPATH_H */
