/*
 * cli_json.h - JSON checking and writing for the `cairn` tool: what `cairn
 * log` accepts, and how `cairn dump` prints records so that every line is
 * valid JSON (RFC 8259) whatever bytes a C API user stored.
 */
#ifndef CAIRN_CLI_JSON_H
#define CAIRN_CLI_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Deepest nesting accepted (cJSON's own limit). */
#define CLI_JSON_DEPTH_MAX 1000

/* Strict RFC 8259 check of s[0..n): exactly one value, with optional
 * whitespace around it; strings must be valid UTF-8 without raw control
 * characters. Returns 0, or -1 with *err_off = offset of the first byte
 * that cannot be part of valid JSON. */
int cli_json_check(const char *s, size_t n, size_t *err_off);

/* What `cairn log` accepts: cJSON must parse s[0..n) fully (trailing
 * whitespace allowed) and cli_json_check() must agree (cJSON tolerates a
 * few things other parsers such as jq reject: leading zeros, raw control
 * characters in strings, invalid UTF-8). Returns 0, or -1 with *err_off. */
int cli_json_validate(const char *s, size_t n, size_t *err_off);

/* Write JSON that passed cli_json_check() to f on one line: without the
 * surrounding whitespace, and without whitespace between tokens when the
 * text contains line breaks. Numbers and strings are copied byte for byte. */
void cli_json_put_compact(FILE *f, const char *s, size_t n);

/* Write s[0..n) as a JSON string literal, quotes included: control
 * characters escaped, invalid UTF-8 bytes replaced by \ufffd. */
void cli_json_put_string(FILE *f, const char *s, size_t n);

/* Write the padded base64 (RFC 4648) of p[0..n) to f. */
void cli_base64_put(FILE *f, const void *p, size_t n);

/* Length (1..4) of the well-formed UTF-8 sequence at p[0..n), n >= 1; 0 when
 * it is not one (overlong, surrogate, past U+10FFFF, truncated). */
size_t cli_utf8_seq(const unsigned char *p, size_t n);

/* Add an integer to a cJSON object as its exact digits (cJSON's numbers
 * are doubles printed to 15 digits: times above ~2^50 would round). */
struct cJSON;
void cli_json_add_int(struct cJSON *o, const char *name, int64_t v);

#endif /* CAIRN_CLI_JSON_H */
