/*
 * fuzz_vecparse.c - cairn_parse_vector, the parser of an external
 * embedder's answer (the tool's --embed-cmd output, one line per text),
 * over arbitrary bytes.
 *
 * Invariants: no crash; success means 1..max finite values, and printing
 * them back as a JSON array parses to the same values; white space after an
 * accepted input changes nothing, any other byte after it is refused; a
 * failure says why.
 */
#include <math.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    float v[64], w[64];
    char err[160], *text;
    size_t n = 0, m = 0, at = 0;
    int rc;

    if (size > 65536)
        return 0;
    err[0] = 0;
    rc = cairn_parse_vector((const char *)data, size, v, 64, &n, err, sizeof err);
    if (rc != CAIRN_OK) {
        FUZZ_CHECK(rc == CAIRN_EINVAL && err[0] != 0 && n == 0);
        return 0;
    }
    FUZZ_CHECK(n >= 1 && n <= 64);
    text = malloc(64 * 32 + 2);
    if (text == NULL)
        return 0;
    text[at++] = '[';
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(isfinite(v[i]));
        at += (size_t)snprintf(text + at, 32, "%s%.9g", i ? "," : "", (double)v[i]);
    }
    text[at++] = ']';
    FUZZ_CHECK(cairn_parse_vector(text, at, w, 64, &m, err, sizeof err) == CAIRN_OK);
    FUZZ_CHECK(m == n);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(w[i] == v[i]);
    free(text);
    /* the input with white space after it: the same values; with a byte
     * that is not white space after that: refused */
    text = malloc(size + 4);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    memcpy(text + size, " \t\r\n", 4);
    FUZZ_CHECK(cairn_parse_vector(text, size + 4, w, 64, &m, err, sizeof err) == CAIRN_OK);
    FUZZ_CHECK(m == n);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(w[i] == v[i]);
    text[size + 1] = size % 2 ? 'x' : 0;
    FUZZ_CHECK(cairn_parse_vector(text, size + 4, w, 64, &m, err, sizeof err) == CAIRN_EINVAL);
    FUZZ_CHECK(m == 0 && strstr(err, "after the array") != NULL);
    free(text);
    return 0;
}
