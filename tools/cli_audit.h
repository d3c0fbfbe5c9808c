/*
 * cli_audit.h - heads of the log's hash chain on the command line
 * (cmd_audit.c): parsing SEQ:HASH, the line a signature covers, checking
 * an Ed25519 signature.
 */
#ifndef CAIRN_CLI_AUDIT_H
#define CAIRN_CLI_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "cairn.h"

/* "SEQ:HASH" (SEQ decimal, HASH 64 hex digits); 1 if it parsed. */
int cli_parse_head(const char *s, cairn_head *h);
/* The line a signature covers: "cairn-head-v1 SEQ HASH\n". */
void cli_head_message(const cairn_head *h, char *buf, size_t cap);
/* n bytes as 2n lowercase hex digits and a NUL. */
void cli_hex(const uint8_t *b, size_t n, char *out);
/* Check sig_hex (128 hex digits) over h's line with the PEM public key:
 * CLI_EXIT_OK when it holds, -1 when it does not, another exit status
 * (reported) when the key or signature does not read. */
int cli_verify_signature(const char *cmd, const cairn_head *h, const char *sig_hex,
                         const char *pubkey_path);

#endif /* CAIRN_CLI_AUDIT_H */
