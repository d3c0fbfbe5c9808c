/*
 * vecparse.c - cairn_parse_vector: one JSON array of numbers, the way an
 * external embedder (the tool's --embed-cmd) answers, and nothing after it
 * but white space. Any bytes in; an error names what is wrong, never a
 * crash.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cairn.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return CAIRN_EINVAL;
}

int cairn_parse_vector(const char *text, size_t len, float *out, size_t max, size_t *n,
                       char *err, size_t errlen)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0), *v;
    size_t i = 0, at;
    int rc = CAIRN_OK;

    *n = 0;
    if (root == NULL || !cJSON_IsArray(root)) {
        cJSON_Delete(root);
        return fail(err, errlen, "not a JSON array of numbers");
    }
    /* cJSON stops after the value: anything but white space after it (a
     * second array, a word, a NUL) is not an answer we understand */
    for (at = (size_t)(end - text); at < len; at++) {
        if (text[at] != ' ' && text[at] != '\t' && text[at] != '\r' && text[at] != '\n') {
            cJSON_Delete(root);
            return fail(err, errlen, "text after the array (at byte %zu)", at);
        }
    }
    cJSON_ArrayForEach(v, root) {
        double d;
        if (!cJSON_IsNumber(v)) {
            rc = fail(err, errlen, "value %zu is not a number", i);
            break;
        }
        d = v->valuedouble;
        if (!isfinite(d) || !isfinite((float)d)) { /* beyond float's range */
            rc = fail(err, errlen, "value %zu is not a finite float", i);
            break;
        }
        if (i == max) {
            rc = fail(err, errlen, "more than %zu values", max);
            break;
        }
        out[i++] = (float)d;
    }
    if (rc == CAIRN_OK && i == 0)
        rc = fail(err, errlen, "an empty array");
    cJSON_Delete(root);
    if (rc == CAIRN_OK)
        *n = i;
    return rc;
}
