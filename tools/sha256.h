/*
 * sha256.h - SHA-256 (FIPS 180-4) as hex, for the "Hash" field of `cairn
 * search` results (the Search-Memory skill's SHA-256 of the content).
 */
#ifndef CAIRN_SHA256_H
#define CAIRN_SHA256_H

#include <stddef.h>

/* hex gets 64 lowercase hex digits and a NUL (an empty string when
 * OpenSSL cannot allocate). */
void sha256_hex(const void *data, size_t len, char hex[65]);

#endif /* CAIRN_SHA256_H */
