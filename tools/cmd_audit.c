/*
 * cmd_audit.c - `cairn head`: the head of the log's hash chain, optionally
 * signed with an Ed25519 key; and what `cairn verify --head` needs to read
 * a head and check its signature (format-spec/chain.md).
 *
 * A signature covers the line "cairn-head-v1 SEQ HASH\n" (SEQ decimal, HASH
 * 64 lowercase hex digits). Keys are PEM files as OpenSSL writes them
 * (`openssl genpkey -algorithm ed25519`, `openssl pkey -pubout`).
 */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_audit.h"
#include "cli_json.h"
#include "commands.h"

const char cmd_head_help[] =
    "usage: cairn head [--format text|json] [--sign KEYFILE]\n"
    "\n"
    "Print the head of the log's hash chain: the seq of the newest record and\n"
    "the SHA-256 chain value after it, which every record of the log, in\n"
    "order, went into (format-spec/chain.md). Keep it somewhere the store's\n"
    "owner cannot rewrite (a ticket, a commit message, a transparency log, a\n"
    "second machine): `cairn verify --head SEQ:HASH` later proves the store\n"
    "still holds exactly that history up to SEQ, and that nothing of it was\n"
    "cut off. The chain finds changes; the head kept elsewhere is what makes\n"
    "a rewrite of the whole store, chain included, visible.\n"
    "\n"
    "A writer's records are in the head once written; the command reads only\n"
    "the segments not yet sealed (the MANIFEST keeps the chain at the end of\n"
    "every sealed one). It never writes to the store.\n"
    "\n"
    "Output (text): \"SEQ:HASH\" (the form --head takes), and with --sign a\n"
    "second line \"signature: HEX\". Output (json): {\"seq\": N, \"hash\":\n"
    "\"HEX\"}, with --sign also \"signature\" and \"public_key\" (raw Ed25519\n"
    "bytes, hex).\n"
    "\n"
    "Options:\n"
    "  --format F      text (default) or json\n"
    "  --sign KEYFILE  sign the head with this Ed25519 private key (PEM, as\n"
    "                  `openssl genpkey -algorithm ed25519` writes it); the\n"
    "                  signature covers the line \"cairn-head-v1 SEQ HASH\\n\"\n"
    "  --store DIR     the store (default: $CAIRN_STORE if set, else ./.cairn)\n"
    "\n"
    "Exit status: 0 success; 1 no store, a key that does not read or is not\n"
    "Ed25519, a segment that does not read as the MANIFEST says (run cairn\n"
    "verify); 64 usage error.\n";

void cli_head_message(const cairn_head *h, char *buf, size_t cap)
{
    char hex[2 * CAIRN_HASH_LEN + 1];
    cli_hex(h->hash, CAIRN_HASH_LEN, hex);
    snprintf(buf, cap, "cairn-head-v1 %llu %s\n", (unsigned long long)h->seq, hex);
}

void cli_hex(const uint8_t *b, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[b[i] >> 4];
        out[2 * i + 1] = d[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static int unhex(const char *s, uint8_t *out, size_t n)
{
    if (strlen(s) != 2 * n)
        return 0;
    for (size_t i = 0; i < 2 * n; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (v < 0)
            return 0;
        if (i % 2 == 0)
            out[i / 2] = (uint8_t)(v << 4);
        else
            out[i / 2] |= (uint8_t)v;
    }
    return 1;
}

int cli_parse_head(const char *s, cairn_head *h)
{
    const char *colon = strchr(s, ':');
    char *end;
    unsigned long long seq;

    if (colon == NULL || colon == s || s[0] < '0' || s[0] > '9')
        return 0;
    seq = strtoull(s, &end, 10);
    if (end != colon)
        return 0;
    h->seq = seq;
    return unhex(colon + 1, h->hash, CAIRN_HASH_LEN);
}

/* Read a PEM key; NULL and a message on stderr when it does not read or is
 * not Ed25519. */
static EVP_PKEY *read_key(const char *cmd, const char *path, int private_key)
{
    FILE *f = fopen(path, "r");
    EVP_PKEY *k;

    if (f == NULL) {
        cli_fail(cmd, CAIRN_EIO, "cannot open the key %s", path);
        return NULL;
    }
    k = private_key ? PEM_read_PrivateKey(f, NULL, NULL, NULL)
                    : PEM_read_PUBKEY(f, NULL, NULL, NULL);
    fclose(f);
    if (k == NULL || EVP_PKEY_get_id(k) != EVP_PKEY_ED25519) {
        EVP_PKEY_free(k);
        cli_fail(cmd, CAIRN_EINVAL, "%s is not an Ed25519 %s key in PEM", path,
                 private_key ? "private" : "public");
        return NULL;
    }
    return k;
}

int cli_verify_signature(const char *cmd, const cairn_head *h, const char *sig_hex,
                         const char *pubkey_path)
{
    uint8_t sig[64];
    char msg[128];
    EVP_PKEY *k;
    EVP_MD_CTX *ctx;
    int ok;

    if (!unhex(sig_hex, sig, sizeof sig))
        return cli_usage_error(cmd, "--signature takes 128 hex digits");
    if ((k = read_key(cmd, pubkey_path, 0)) == NULL)
        return CLI_EXIT_FAIL;
    cli_head_message(h, msg, sizeof msg);
    ctx = EVP_MD_CTX_new();
    ok = ctx != NULL && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
         EVP_DigestVerify(ctx, sig, sizeof sig, (const uint8_t *)msg, strlen(msg)) == 1;
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(k);
    return ok ? CLI_EXIT_OK : -1;
}

/* Sign the head's line: sig[64] and the raw public key pub[32]. */
static int sign_head(const char *cmd, const cairn_head *h, const char *key_path, uint8_t sig[64],
                     uint8_t pub[32])
{
    size_t sig_len = 64, pub_len = 32;
    char msg[128];
    EVP_PKEY *k = read_key(cmd, key_path, 1);
    EVP_MD_CTX *ctx;
    int ok;

    if (k == NULL)
        return CLI_EXIT_FAIL;
    cli_head_message(h, msg, sizeof msg);
    ctx = EVP_MD_CTX_new();
    ok = ctx != NULL && EVP_DigestSignInit(ctx, NULL, NULL, NULL, k) == 1 &&
         EVP_DigestSign(ctx, sig, &sig_len, (const uint8_t *)msg, strlen(msg)) == 1 &&
         sig_len == 64 && EVP_PKEY_get_raw_public_key(k, pub, &pub_len) == 1 && pub_len == 32;
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(k);
    if (!ok)
        return cli_fail(cmd, CAIRN_EINVAL, "could not sign with the key %s", key_path);
    return CLI_EXIT_OK;
}

int cmd_head(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {"sign", 1}, {NULL, 0}};
    const char *name, *val, *key = NULL;
    char hex[2 * CAIRN_HASH_LEN + 1], sig_hex[129], pub_hex[65];
    uint8_t sig[64], pub[32];
    cairn_db *db = NULL;
    cairn_head h;
    cli_args a;
    int r, rc, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_head_help);
        if (r == CLI_ARG_POS)
            return cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
        if (strcmp(name, "sign") == 0)
            key = val;
        else if ((r = cli_parse_format(ctx->cmd, val, &json)) >= 0)
            return r;
    }
    if ((rc = cli_open_read(ctx, &db)) != CAIRN_OK)
        return CLI_EXIT_FAIL;
    rc = cairn_head_get(db, &h);
    if (rc != CAIRN_OK) {
        r = cli_fail_db(ctx->cmd, db, rc, NULL);
        cairn_close(db);
        return r;
    }
    cairn_close(db);
    if (key != NULL && (r = sign_head(ctx->cmd, &h, key, sig, pub)) != CLI_EXIT_OK)
        return r;
    cli_hex(h.hash, CAIRN_HASH_LEN, hex);
    if (key != NULL) {
        cli_hex(sig, sizeof sig, sig_hex);
        cli_hex(pub, sizeof pub, pub_hex);
    }
    if (json) {
        printf("{\"seq\":%llu,\"hash\":\"%s\"", (unsigned long long)h.seq, hex);
        if (key != NULL)
            printf(",\"signature\":\"%s\",\"public_key\":\"%s\"", sig_hex, pub_hex);
        printf("}\n");
    } else {
        printf("%llu:%s\n", (unsigned long long)h.seq, hex);
        if (key != NULL)
            printf("signature: %s\n", sig_hex);
    }
    return CLI_EXIT_OK;
}

const char cmd_replay_help[] =
    "usage: cairn replay --to SEQ DIR [--format text|json]\n"
    "\n"
    "Write a new store in DIR (made, or empty) holding this store's log up to\n"
    "seq SEQ, for offline analysis: every record byte for byte, with its seq\n"
    "and time, so every command on the copy answers as this store would have\n"
    "at SEQ, and the copy's hash chain head is this store's chain at SEQ. The\n"
    "copy is checked before the command returns (as `cairn verify --head`\n"
    "would). Index files are not copied: the copy's first command folds them\n"
    "from its log; nor ACCESS, the access counts no record holds yet. The\n"
    "copy gets a store id of its own and this store's settings.\n"
    "\n"
    "Output (text): \"replayed seqs 1..SEQ into DIR: N segment(s), B bytes of\n"
    "records; head SEQ:HASH, verified\". Output (json): {\"dir\", \"seq\",\n"
    "\"segments\", \"bytes\", \"head\": {\"seq\", \"hash\"}}.\n"
    "\n"
    "Options:\n"
    "  --to SEQ      the last seq the copy holds\n"
    "  --format F    text (default) or json\n"
    "  --store DIR   the store (default: $CAIRN_STORE if set, else ./.cairn)\n"
    "\n"
    "Exit status: 0 written and verified; 1 no store, DIR not empty, SEQ past\n"
    "the log's end or inside a hole a compaction left (the message names the\n"
    "seqs it stands for), the copy did not verify, I/O error; 64 usage error.\n";

int cmd_replay(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"to", 1}, {"format", 1}, {NULL, 0}};
    const char *name, *val, *dir = NULL;
    char hex[2 * CAIRN_HASH_LEN + 1], *end;
    unsigned long long to = 0;
    cairn_replay_report rep;
    cairn_db *db = NULL;
    cli_args a;
    int r, rc, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_replay_help);
        if (r == CLI_ARG_POS) {
            if (dir != NULL)
                return cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
            dir = val;
        } else if (strcmp(name, "to") == 0) {
            to = strtoull(val, &end, 10);
            if (val[0] < '0' || val[0] > '9' || *end != '\0' || to == 0)
                return cli_usage_error(ctx->cmd, "--to takes a seq, 1 or more; got '%s'", val);
        } else if ((r = cli_parse_format(ctx->cmd, val, &json)) >= 0)
            return r;
    }
    if (dir == NULL || to == 0)
        return cli_usage_error(ctx->cmd, "usage: cairn replay --to SEQ DIR");
    if ((rc = cli_open_read(ctx, &db)) != CAIRN_OK)
        return CLI_EXIT_FAIL;
    rc = cairn_replay(db, to, dir, &rep);
    if (rc != CAIRN_OK) {
        r = cli_fail_db(ctx->cmd, db, rc, NULL);
        cairn_close(db);
        return r;
    }
    cairn_close(db);
    cli_hex(rep.head.hash, CAIRN_HASH_LEN, hex);
    if (json) {
        printf("{\"dir\":");
        cli_json_put_string(stdout, dir, strlen(dir));
        printf(",\"seq\":%llu,\"segments\":%llu,\"bytes\":%llu,\"head\":{\"seq\":%llu,"
               "\"hash\":\"%s\"}}\n",
               (unsigned long long)rep.seq, (unsigned long long)rep.segments,
               (unsigned long long)rep.bytes, (unsigned long long)rep.head.seq, hex);
    } else {
        printf("replayed seqs 1..%llu into %s: %llu segment(s), %llu bytes of records; head "
               "%llu:%s, verified\n",
               (unsigned long long)rep.seq, dir, (unsigned long long)rep.segments,
               (unsigned long long)rep.bytes, (unsigned long long)rep.head.seq, hex);
    }
    return CLI_EXIT_OK;
}
