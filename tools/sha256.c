/*
 * sha256.c - see sha256.h. OpenSSL's SHA-256, the one the log's hash chain
 * uses (engine/log/chain.c).
 */
#include "sha256.h"

#include <openssl/evp.h>

void sha256_hex(const void *data, size_t len, char hex[65])
{
    static const char d[] = "0123456789abcdef";
    unsigned char md[32];
    unsigned int n = 0;
    if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1 || n != sizeof md) {
        hex[0] = '\0'; /* OpenSSL fails only when it cannot allocate */
        return;
    }
    for (size_t i = 0; i < sizeof md; i++) {
        hex[2 * i] = d[md[i] >> 4];
        hex[2 * i + 1] = d[md[i] & 15];
    }
    hex[64] = '\0';
}
