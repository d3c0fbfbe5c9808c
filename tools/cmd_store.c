/*
 * cmd_store.c - `cairn init` (create a store), `cairn config` (list and
 * change the store's settings), `cairn verify` (check every checksum and
 * structure) and `cairn stats` (counts, sizes, settings).
 *
 * verify, stats and config without a value open the store read-only: they
 * take no lock and work while a writer runs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_asof.h"
#include "cli_audit.h"
#include "cli_json.h"
#include "commands.h"

const char cmd_init_help[] =
    "usage: cairn init [--durability none|batch|full] [--batch-ms N]\n"
    "                  [--segment-size BYTES|NK|NM|NG] [--max-memories N]\n"
    "                  [--retain POLICY] [--format text|json]\n"
    "\n"
    "Create a store in the store directory (created if missing) with these\n"
    "settings; later commands use them (`cairn config` lists them). Prints\n"
    "nothing on success (text), or {\"store\",\"durability\",\"batch_ms\",\n"
    "\"segment_size\",\"max_memories\",\"retain\"} (json).\n"
    "\n"
    "Options:\n"
    "  --durability MODE   when appended records reach stable storage\n"
    "                      (default: batch):\n"
    "                        none   never fsynced, except at segment roll and close\n"
    "                        batch  fsynced at most N ms after the append\n"
    "                        full   an append returns after fdatasync\n"
    "  --batch-ms N        period in ms of batch fsyncs and buffer flushes,\n"
    "                      1..4294967295 (default: 50)\n"
    "  --segment-size S    roll the active segment past S bytes; K, M, G are\n"
    "                      binary units; 4K..4G (default: 64M)\n"
    "  --max-memories N    the most live memories a namespace holds (default:\n"
    "                      10000; 0 = no limit): a store past it prunes the\n"
    "                      namespace back to it and says so, an import that\n"
    "                      would pass it is refused. `cairn config max-memories\n"
    "                      N` changes it later\n"
    "  --retain POLICY     what `cairn compact` keeps (default: all): all keeps\n"
    "                      every record, for audits and replay; live drops\n"
    "                      the records of memories no longer live once they\n"
    "                      went more than GRACE ago (default 7d; a number\n"
    "                      and ms, s, m, h or d; live:0 drops them at the next\n"
    "                      compaction); add ,events:AGE or ,events:SIZE (B,\n"
    "                      KiB, MiB, GiB, TiB) to limit events per namespace\n"
    "                      (live:7d,events:30d). `cairn config retain POLICY`\n"
    "                      changes it\n"
    "  --format F          text (default) or json\n"
    "  --store DIR         the store (default: $CAIRN_STORE if set, else ./.cairn)\n"
    "\n"
    "Exit status: 0 created; 1 the store already exists (DIR/MANIFEST is there),\n"
    "or it could not be created; 64 usage error.\n";

const char cmd_config_help[] =
    "usage: cairn config [KEY] [--format text|json]\n"
    "       cairn config max-memories N\n"
    "       cairn config retain all|live[:GRACE][,events:AGE][,events:SIZE]\n"
    "       cairn config reflect-threshold|core-budget|core-section-budget N\n"
    "\n"
    "Without KEY: list every setting of the store, one per line, \"KEY: VALUE\":\n"
    "  durability    none, batch or full (chosen by `cairn init`)\n"
    "  batch-ms      the batch fsync and buffer flush period, ms (cairn init)\n"
    "  segment-size  bytes past which the active segment rolls (cairn init)\n"
    "  max-memories  the most live memories a namespace holds; 0 = no limit\n"
    "                (10000 unless changed; a store created before the setting\n"
    "                existed has 10000, the limit applied then)\n"
    "  retain        what `cairn compact` keeps: all (every record; the default)\n"
    "                or live:GRACE (the records of memories no longer live go\n"
    "                once they went more than GRACE ago), and event limits\n"
    "                (,events:30d ,events:10GiB); see cairn compact\n"
    "  labels        how causal node and pattern labels are compared:\n"
    "                case-insensitive (a store made by this release) or exact\n"
    "                (a store made before); fixed at creation\n"
    "  reflect-threshold    the stream importance since the last reflection\n"
    "                at which one is due (150)\n"
    "  core-budget   the tokens core memory holds at most (8000)\n"
    "  core-section-budget  the tokens a core section holds at most (2000;\n"
    "                not above core-budget)\n"
    "With --format json: {\"durability\",\"batch_ms\",\"segment_size\",\n"
    "\"max_memories\",\"retain\",\"labels\",\"reflect_threshold\",\"core_budget\",\n"
    "\"core_section_budget\"}. With KEY: its value alone (json: that member\n"
    "alone).\n"
    "\n"
    "With KEY and a value: change the setting (max-memories, retain and the\n"
    "tier settings change after `cairn init`); prints nothing (json: the member\n"
    "set). Budgets hold for changes from then on. It holds from the next command on. A new retain policy drops\n"
    "nothing by itself: the next `cairn compact` applies it. Lowering\n"
    "max-memories prunes nothing by itself: the next\n"
    "`cairn add` to a namespace holding more prunes it back to N and says so\n"
    "(`cairn restore ID` brings a pruned memory back), and an import that would\n"
    "pass it is refused. Listing opens the store read-only (it works while a\n"
    "writer runs); a change takes the writer lock for one commit (waiting up to\n"
    "--busy-timeout while another process holds it).\n"
    "\n"
    "Options:\n"
    "  --format F    text (default) or json\n"
    "  --store DIR   the store (default: $CAIRN_STORE if set, else ./.cairn)\n"
    "\n"
    "Exit status: 0 success; 1 no store, store locked, I/O error; 64 usage error\n"
    "(an unknown KEY, a bad N, or a setting that cannot change after init).\n";

const char cmd_verify_help[] =
    "usage: cairn verify [--format text|json] [--head SEQ:HASH\n"
    "                    [--signature HEX --pubkey KEYFILE]]\n"
    "\n"
    "Read every file of the store and check every checksum and structure: the\n"
    "log's segments and manifest, the log's hash chain (recomputed from the\n"
    "first record and compared with the value the MANIFEST keeps at the end of\n"
    "every sealed segment: a record changed together with its checksum, a\n"
    "segment dropped, swapped or replaced; format-spec/chain.md), the memory index file (mem-*.cmx: every\n"
    "row, hash table, text index and posting, and every row against its\n"
    "memory's store record in the log, where the content is;\n"
    "format-spec/memindex.md), the\n"
    "newest causal graph file and the generations on it (every byte;\n"
    "format-spec/graph.md), and the\n"
    "access side file (ACCESS: its header and every entry, a torn last entry\n"
    "excepted; format-spec/access.md). The store is opened read-only, so\n"
    "verify works while a writer runs (a torn tail of the active segment is\n"
    "then not a problem: it may be in flight). A damaged memory index or\n"
    "graph file loses nothing (each is rebuilt from the log), a damaged ACCESS\n"
    "only access statistics, but each is reported like any other problem.\n"
    "Temporary files (MANIFEST.tmp, *.seg.tmp, mem-*.cmx.tmp, graph-*.cgx.tmp,\n"
    "graph-*.cgg.tmp) are listed but are not problems: one left by a crash or a\n"
    "failed write is never read, only takes space, and the next writer open\n"
    "removes it.\n"
    "\n"
    "Output (text): one line per problem, \"FILE@OFFSET: CODE: message\" (CODE\n"
    "a CAIRN_E* name, FILE relative to the store directory, OFFSET in bytes,\n"
    "decimal); one line per temporary file, \"note: FILE (N bytes): why\"; when\n"
    "there is no problem, \"ok: R records in S segments verified\" (and\n"
    "\", memory index verified\", \", graph file verified\", \", access file\n"
    "verified\" for those there are). With problems, stderr gets \"cairn:\n"
    "verify: N problem(s)\". Output (json): one object {\"ok\", \"records\",\n"
    "\"segments\", \"memory_index\", \"graph\" and \"access\" (each \"verified\",\n"
    "\"damaged\", or null when there is none), \"problems\": [{\"file\",\n"
    "\"offset\", \"code\", \"message\"}], \"temp_files\":\n"
    "[{\"file\", \"bytes\", \"in_flight\" (true: a writer is live and may be\n"
    "writing it)}]}.\n"
    "\n"
    "With --head SEQ:HASH (as `cairn head` printed it), verify also proves\n"
    "that the store holds exactly the history that head names: the chain at\n"
    "SEQ must be HASH, the log must reach SEQ (a log cut before it is a\n"
    "problem naming the missing records), and the segments up to SEQ must\n"
    "have no other problem (a torn tail after SEQ aside). A compaction's\n"
    "holes are gone across as they say, once the chain before each is\n"
    "checked: the output counts them. Each problem names the first seq\n"
    "that differs, or the range it is in; the JSON gets \"first_bad_seq\" (0:\n"
    "none found) and \"head\": \"proven\" or \"not proven\", \"holes\" and\n"
    "\"hole_seqs\" (the holes gone across as they say). A head signed by\n"
    "`cairn head --sign` is checked with --signature and --pubkey first.\n"
    "What this proves and what it does not: README, \"Auditing\".\n"
    "\n"
    "Options:\n"
    "  --format F        text (default) or json\n"
    "  --head SEQ:HASH   a head kept elsewhere: prove the store still holds it\n"
    "  --signature HEX   the head's Ed25519 signature (cairn head --sign)\n"
    "  --pubkey KEYFILE  the public key (PEM) the signature is checked with\n"
    "  --store DIR       the store (default: $CAIRN_STORE if set, else ./.cairn)\n"
    "\n"
    "Exit status: 0 no problems; 1 the check could not run (no store, I/O\n"
    "error); 2 problems found, or the store is too damaged to open; 64 usage\n"
    "error.\n";

const char cmd_stats_help[] =
    "usage: cairn stats [--format text|json] [--json]\n"
    "\n"
    "Print the store's statistics: the store's id (32 hex digits), records,\n"
    "records lost from the end of the log if this open found any (the log ends\n"
    "before a seq the MANIFEST knew was durable: 'lost records: N..M'; JSON\n"
    "\"lost_records\": {\"first\", \"last\"} or null), the records writers found lost\n"
    "that way and retired over the store's life ('records retired: N', shown\n"
    "when not 0; JSON \"lost_total\"), first and last sequence numbers,\n"
    "segments (active, closed awaiting sealing, sealed), bytes on disk (every\n"
    "file), log bytes (encoded records, uncompressed), the compression ratio\n"
    "of sealed segments (their records' raw bytes / their file bytes; n/a when\n"
    "none is sealed), the settings: durability, batch ms, segment size; and the\n"
    "memories: live ones (not deleted or expired), deleted ones, by category,\n"
    "average importance, oldest and newest (JSON: \"memories\" with Engram's\n"
    "total, byCategory, avgImportance, oldest, newest, plus deleted, skipped,\n"
    "unfinished), the memory records replay skipped (\"skipped records:\",\n"
    "when any: records that do not decode or apply, and those of an import or\n"
    "forget a crash or a full disk cut short, which are never applied, of\n"
    "which \"unfinished\" counts the ones replayed since the memory index),\n"
    "and the memory index file: its size, the last seq it covers, the memories\n"
    "it holds, the memory records after it (replayed at open), and why a file\n"
    "was set aside if one was (JSON: \"memory_index\"); the vectors: how many\n"
    "live memories have one, of which embedder and dimension (\"none\" when\n"
    "the store holds none; JSON: \"vectors\", {\"embedder\", \"dim\", \"count\"}\n"
    "or null); and each temporary\n"
    "file in the store directory with its size (\"temp file:\" lines; JSON:\n"
    "\"temp_files\": [{\"file\", \"bytes\", \"in_flight\"}]): one left by a crash\n"
    "or a failed write is never read, and the next writer open removes it.\n"
    "Opened read-only, so it works while a writer runs.\n"
    "\n"
    "Options:\n"
    "  --format F    text (default): \"key: value\" lines; json: one JSON object,\n"
    "                sizes in bytes, compression_ratio null when nothing is sealed\n"
    "  --json        the same as --format json\n"
    "  --store DIR   the store (default: $CAIRN_STORE if set, else ./.cairn)\n"
    AS_OF_HELP
    "\n"
    "Exit status: 0 success; 1 no store or I/O error; 64 usage error.\n";

/* ---- init ----------------------------------------------------------------- */

int cmd_init(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {
        {"durability", 1}, {"batch-ms", 1}, {"segment-size", 1}, {"max-memories", 1},
        {"retain", 1},     {"format", 1},   {NULL, 0}};
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX], *manifest;
    const char *name, *val;
    cairn_db *db = NULL;
    cairn_stats st;
    cairn_config cf;
    cli_args a;
    size_t plen;
    uint64_t v, max_memories = 0;
    int r, rc, exists, json = 0, set_max = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_init_help);
        if (r == CLI_ARG_POS)
            return cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
        if (strcmp(name, "durability") == 0) {
            if (strcmp(val, "none") == 0)
                o.durability = CAIRN_DURABILITY_NONE;
            else if (strcmp(val, "batch") == 0)
                o.durability = CAIRN_DURABILITY_BATCH;
            else if (strcmp(val, "full") == 0)
                o.durability = CAIRN_DURABILITY_FULL;
            else
                return cli_usage_error(ctx->cmd,
                                       "invalid durability '%s' (none, batch or full)", val);
        } else if (strcmp(name, "batch-ms") == 0) {
            if (cli_parse_u64(val, UINT32_MAX, &v) != 0 || v == 0)
                return cli_usage_error(ctx->cmd, "invalid --batch-ms '%s' (1..4294967295)",
                                       val);
            o.batch_ms = (uint32_t)v;
        } else if (strcmp(name, "segment-size") == 0) {
            if (cli_parse_size(val, &v) != 0 || v < 4096 || v > (1ull << 32))
                return cli_usage_error(ctx->cmd, "invalid --segment-size '%s' (4K..4G)", val);
            o.segment_size = v;
        } else if (strcmp(name, "max-memories") == 0) {
            if (cli_parse_u64(val, UINT64_MAX, &max_memories) != 0)
                return cli_usage_error(ctx->cmd, "invalid --max-memories '%s' (0 = no limit, "
                                       "or a count)", val);
            set_max = 1;
        } else if (strcmp(name, "retain") == 0) {
            cairn_retention rp;
            if (cairn_retain_parse(val, &rp) != CAIRN_OK)
                return cli_usage_error(ctx->cmd, "invalid --retain '%s' (all, live, or live:GRACE "
                                       "as live:7d, live:12h, live:0; and events:AGE or "
                                       "events:SIZE as events:30d, events:10GiB)", val);
            o.retain = val;
        } else if (strcmp(name, "format") == 0) {
            if ((r = cli_parse_format(ctx->cmd, val, &json)) >= 0)
                return r;
        }
    }

    /* An existing store is an error, not something to reopen quietly. */
    plen = strlen(ctx->store) + sizeof "/MANIFEST";
    manifest = malloc(plen);
    if (manifest == NULL)
        return cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
    snprintf(manifest, plen, "%s/MANIFEST", ctx->store);
    exists = access(manifest, F_OK) == 0;
    free(manifest);
    if (exists)
        return cli_fail(ctx->cmd, CAIRN_EEXIST, "store already exists at %s", ctx->store);

    o.create = 1;
    o.background = 0;
    err[0] = '\0';
    o.busy_timeout_ms = ctx->busy_timeout_ms;
    /* in the store's first MANIFEST: no window with the default limit */
    o.max_memories = !set_max ? 0 : max_memories == 0 ? CAIRN_NO_LIMIT : max_memories;
    rc = cairn_open(&db, ctx->store, &o, err, sizeof err);
    if (rc != CAIRN_OK)
        return cli_fail(ctx->cmd, rc, "%s", err[0] ? err : ctx->store);
    rc = cairn_sync(db);
    if (rc == CAIRN_OK)
        rc = cairn_stats_get(db, &st);
    if (rc == CAIRN_OK)
        rc = cairn_config_get(db, &cf);
    if (rc != CAIRN_OK) {
        cli_fail_db(ctx->cmd, db, rc, NULL);
        cairn_close(db);
        return CLI_EXIT_FAIL;
    }
    rc = cairn_close(db);
    if (rc != CAIRN_OK)
        return cli_fail(ctx->cmd, rc, "closing %s failed", ctx->store);
    if (json) {
        printf("{\"store\":");
        cli_json_put_string(stdout, ctx->store, strlen(ctx->store));
        char pol[96];
        cairn_retain_format(&cf.retain, pol, sizeof pol);
        printf(",\"durability\":\"%s\",\"batch_ms\":%u,\"segment_size\":%llu,"
               "\"max_memories\":%llu,\"retain\":\"%s\"}\n",
               cli_durability_name(st.durability), (unsigned)st.batch_ms,
               (unsigned long long)st.segment_size, (unsigned long long)cf.max_memories, pol);
    }
    return CLI_EXIT_OK;
}

/* ---- config --------------------------------------------------------------- */

/* The settings `cairn config` names, in the order it lists them. */
static const char *const config_keys[] = {"durability",  "batch-ms",          "segment-size",
                                          "max-memories", "retain",           "labels",
                                          "reflect-threshold", "core-budget", "core-section-budget"};
#define KEY_MAX_MEMORIES 3
#define KEY_RETAIN 4
#define KEY_LABELS 5
#define KEY_REFLECT 6
#define KEY_CORE 7
#define KEY_SECTION 8
#define N_CONFIG_KEYS (sizeof config_keys / sizeof config_keys[0])

/* Setting k of c: its JSON name and its value as text (a JSON string for
 * durability, digits for the rest). */
static const char *config_value(const cairn_config *c, size_t k, char *buf, size_t len,
                                const char **json_name)
{
    static const char *const json_names[] = {"durability", "batch_ms", "segment_size",
                                             "max_memories", "retain", "labels",
                                             "reflect_threshold", "core_budget",
                                             "core_section_budget"};
    *json_name = json_names[k];
    switch (k) {
    case 0:
        return cli_durability_name(c->durability);
    case 1:
        snprintf(buf, len, "%u", (unsigned)c->batch_ms);
        return buf;
    case 2:
        snprintf(buf, len, "%llu", (unsigned long long)c->segment_size);
        return buf;
    case KEY_RETAIN:
        cairn_retain_format(&c->retain, buf, len);
        return buf;
    case KEY_LABELS:
        return c->labels_fold_case ? "case-insensitive" : "exact";
    case KEY_REFLECT:
        snprintf(buf, len, "%u", (unsigned)c->reflect_threshold);
        return buf;
    case KEY_CORE:
        snprintf(buf, len, "%u", (unsigned)c->core_budget);
        return buf;
    case KEY_SECTION:
        snprintf(buf, len, "%u", (unsigned)c->core_section_budget);
        return buf;
    default:
        snprintf(buf, len, "%llu", (unsigned long long)c->max_memories);
        return buf;
    }
}

static int config_set(cli_ctx *ctx, size_t k, const char *val, int json)
{
    cairn_options o;
    char err[CAIRN_ERRMSG_MAX] = "";
    cairn_db *db = NULL;
    uint64_t n = 0;
    cairn_retention retain;
    int rc;

    if (k == KEY_LABELS)
        return cli_usage_error(ctx->cmd, "labels is fixed when the store is created (node ids "
                               "come from the labels); a new store compares them case-insensitively");
    if (k < KEY_MAX_MEMORIES)
        return cli_usage_error(ctx->cmd, "%s is chosen when the store is created (cairn init "
                               "--%s) and cannot change; max-memories, retain, "
                               "reflect-threshold, core-budget and core-section-budget can",
                               config_keys[k], config_keys[k]);
    if (k >= KEY_REFLECT && (cli_parse_u64(val, 100000000, &n) != 0 || n == 0))
        return cli_usage_error(ctx->cmd, "invalid %s '%s' (1..100000000)", config_keys[k], val);
    if (k == KEY_MAX_MEMORIES && cli_parse_u64(val, UINT64_MAX, &n) != 0)
        return cli_usage_error(ctx->cmd, "invalid max-memories '%s' (0 = no limit, or a count)",
                               val);
    if (k == KEY_RETAIN && cairn_retain_parse(val, &retain) != CAIRN_OK)
        return cli_usage_error(ctx->cmd, "invalid retain '%s' (all, live, or live:GRACE as "
                               "live:7d, live:12h, live:0; and events:AGE or events:SIZE as "
                               "events:30d, events:10GiB)", val);
    cli_options(ctx, &o); /* --busy-timeout */
    o.background = 0;
    rc = cairn_open(&db, ctx->store, &o, err, sizeof err);
    if (rc == CAIRN_ENOTFOUND)
        return cli_fail(ctx->cmd, rc, "no store at %s (run 'cairn init')", ctx->store);
    if (rc != CAIRN_OK)
        return cli_fail(ctx->cmd, rc, "%s", err[0] ? err : ctx->store);
    cli_warn_recovery(ctx, db);
    rc = k == KEY_RETAIN    ? cairn_config_set_retain(db, &retain)
         : k == KEY_REFLECT ? cairn_config_set_tiers(db, (uint32_t)n, 0, 0)
         : k == KEY_CORE    ? cairn_config_set_tiers(db, 0, (uint32_t)n, 0)
         : k == KEY_SECTION ? cairn_config_set_tiers(db, 0, 0, (uint32_t)n)
                            : cairn_config_set_max_memories(db, n);
    if (rc != CAIRN_OK) {
        cli_fail_db(ctx->cmd, db, rc, NULL);
        cairn_close(db);
        return CLI_EXIT_FAIL;
    }
    rc = cairn_close(db);
    if (rc != CAIRN_OK)
        return cli_fail(ctx->cmd, rc, "closing %s failed", ctx->store);
    if (json && k == KEY_RETAIN) {
        char pol[96];
        cairn_retain_format(&retain, pol, sizeof pol);
        printf("{\"retain\":\"%s\"}\n", pol);
    } else if (json) {
        static const char *const jn[] = {"", "", "", "max_memories", "", "", "reflect_threshold",
                                         "core_budget", "core_section_budget"};
        printf("{\"%s\":%llu}\n", jn[k], (unsigned long long)n);
    }
    return CLI_EXIT_OK;
}

int cmd_config(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {NULL, 0}};
    const char *name, *val, *key = NULL, *value = NULL, *jname, *text;
    cairn_db *db = NULL;
    cairn_config c;
    cli_args a;
    size_t k = N_CONFIG_KEYS;
    char buf[96];
    int r, rc, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_config_help);
        if (r == CLI_ARG_POS) {
            if (value != NULL)
                return cli_usage_error(ctx->cmd, "too many arguments (KEY and a VALUE at most)");
            if (key != NULL)
                value = val;
            else
                key = val;
        } else if ((r = cli_parse_format(ctx->cmd, val, &json)) >= 0) {
            return r;
        }
    }
    if (key != NULL) {
        for (k = 0; k < N_CONFIG_KEYS && strcmp(key, config_keys[k]) != 0; k++)
            ;
        if (k == N_CONFIG_KEYS)
            return cli_usage_error(ctx->cmd, "unknown setting '%s' (durability, batch-ms, "
                                   "segment-size, max-memories, retain, labels, "
                                   "reflect-threshold, core-budget or core-section-budget)", key);
    }
    if (value != NULL)
        return config_set(ctx, k, value, json);
    if (cli_open_read(ctx, &db) != CAIRN_OK)
        return CLI_EXIT_FAIL;
    rc = cairn_config_get(db, &c);
    if (rc != CAIRN_OK) {
        cli_fail_db(ctx->cmd, db, rc, NULL);
        cairn_close(db);
        return CLI_EXIT_FAIL;
    }
    cairn_close(db);
    for (size_t i = 0; i < N_CONFIG_KEYS; i++) {
        if (key != NULL && i != k)
            continue;
        text = config_value(&c, i, buf, sizeof buf, &jname);
        if (json) {
            printf("%s\"%s\":", key != NULL || i == 0 ? "{" : ",", jname);
            if (i == 0 || i == KEY_RETAIN || i == KEY_LABELS)
                printf("\"%s\"", text);
            else
                fputs(text, stdout);
        } else if (key != NULL) {
            printf("%s\n", text);
        } else {
            printf("%s: %s\n", config_keys[i], text);
        }
    }
    if (json)
        printf("}\n");
    return CLI_EXIT_OK;
}

/* ---- temporary files (verify, stats) --------------------------------------- */

typedef struct temp_file {
    char *name;
    uint64_t bytes;
    int in_flight;
} temp_file;

typedef struct temp_list {
    temp_file *v;
    size_t n, cap;
    int oom;
} temp_list;

static void temp_add(void *user, const char *file, uint64_t bytes, int in_flight)
{
    temp_list *l = user;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        temp_file *v = realloc(l->v, cap * sizeof *v);
        if (v == NULL) {
            l->oom = 1;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    if ((l->v[l->n].name = strdup(file)) == NULL) {
        l->oom = 1;
        return;
    }
    l->v[l->n].bytes = bytes;
    l->v[l->n].in_flight = in_flight;
    l->n++;
}

static void temp_free(temp_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
}

/* The store's temporary files into *l (CAIRN_ENOMEM if they do not fit). */
static int temp_list_get(cairn_db *db, temp_list *l)
{
    int rc;
    memset(l, 0, sizeof *l);
    rc = cairn_temp_files(db, temp_add, l, NULL);
    return rc == CAIRN_OK && l->oom ? CAIRN_ENOMEM : rc;
}

static const char *temp_why(const temp_file *t)
{
    return t->in_flight ? "a temporary file; a writer is live and may be writing it"
                        : "a temporary file left by a crash or a failed write; never read, "
                          "the next writer open removes it";
}

/* ,"temp_files":[...] */
static void temp_json(const temp_list *l)
{
    printf(",\"temp_files\":[");
    for (size_t i = 0; i < l->n; i++) {
        printf("%s{\"file\":", i ? "," : "");
        cli_json_put_string(stdout, l->v[i].name, strlen(l->v[i].name));
        printf(",\"bytes\":%llu,\"in_flight\":%s}", (unsigned long long)l->v[i].bytes,
               l->v[i].in_flight ? "true" : "false");
    }
    putchar(']');
}

/* ---- verify --------------------------------------------------------------- */

typedef struct verify_out {
    int json;
    uint64_t n;
} verify_out;

static void verify_problem(void *user, const char *file, uint64_t offset, int code,
                           const char *message)
{
    verify_out *v = user;
    char name[32];

    cli_code_name(code, name, sizeof name);
    if (!v->json) {
        printf("%s@%llu: %s: %s\n", file ? file : "-", (unsigned long long)offset, name,
               message ? message : "");
        return;
    }
    printf("%s{\"file\":", v->n++ ? "," : "");
    cli_json_put_string(stdout, file ? file : "-", strlen(file ? file : "-"));
    printf(",\"offset\":%llu,\"code\":\"%s\",\"message\":", (unsigned long long)offset, name);
    cli_json_put_string(stdout, message ? message : "", strlen(message ? message : ""));
    putchar('}');
}

int cmd_verify(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {"json", 0}, {"head", 1},
                                       {"signature", 1}, {"pubkey", 1}, {NULL, 0}};
    cairn_db *db = NULL;
    cairn_stats s;
    temp_list tl = {NULL, 0, 0, 0};
    uint64_t problems = 0, mx_problems = 0, g_problems = 0, a_problems = 0, first_bad = 0;
    verify_out v = {0, 0};
    int checked = 0, g_checked = 0, a_checked = 0, have_head = 0;
    const char *name, *val, *sig = NULL, *pubkey = NULL;
    cairn_head want;
    cairn_verify_report vr;
    cli_args a;
    int r, rc;

    memset(&vr, 0, sizeof vr);
    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_verify_help);
        if (r == CLI_ARG_POS)
            return cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
        if (strcmp(name, "json") == 0)
            v.json = 1;
        else if (strcmp(name, "head") == 0) {
            if (!cli_parse_head(val, &want))
                return cli_usage_error(ctx->cmd, "--head takes SEQ:HASH (a decimal seq, 64 hex "
                                       "digits), as `cairn head` prints it; got '%s'", val);
            have_head = 1;
        } else if (strcmp(name, "signature") == 0)
            sig = val;
        else if (strcmp(name, "pubkey") == 0)
            pubkey = val;
        else if ((r = cli_parse_format(ctx->cmd, val, &v.json)) >= 0)
            return r;
    }
    if ((sig != NULL) != (pubkey != NULL) || (sig != NULL && !have_head))
        return cli_usage_error(ctx->cmd, "--signature and --pubkey go together, with --head");
    if (sig != NULL) {
        r = cli_verify_signature(ctx->cmd, &want, sig, pubkey);
        if (r > 0)
            return r;
        if (r < 0) {
            char hex[2 * CAIRN_HASH_LEN + 1];
            cli_hex(want.hash, CAIRN_HASH_LEN, hex);
            fprintf(stderr, "cairn: verify: the signature of head %llu:%s does not hold with "
                    "the key %s\n", (unsigned long long)want.seq, hex, pubkey);
            return CLI_EXIT_PROBLEMS;
        }
    }
    rc = cli_open_read(ctx, &db);
    if (rc != CAIRN_OK)
        /* A store too damaged to open is what verify is for finding. */
        return rc == CAIRN_ECORRUPT || rc == CAIRN_ECHECKSUM || rc == CAIRN_EVERSION
                   ? CLI_EXIT_PROBLEMS
                   : CLI_EXIT_FAIL;
    if (v.json)
        printf("{\"problems\":[");
    rc = cairn_verify_head(db, have_head ? &want : NULL, verify_problem, &v, &vr);
    problems = vr.problems;
    first_bad = vr.first_bad;
    if (rc == CAIRN_OK)
        rc = cairn_mem_verify_index(db, verify_problem, &v, &mx_problems, &checked);
    if (rc == CAIRN_OK)
        rc = cairn_reflex_verify(db, verify_problem, &v, &g_problems, &g_checked);
    if (rc == CAIRN_OK)
        rc = cairn_mem_verify_access(db, verify_problem, &v, &a_problems, &a_checked);
    problems += mx_problems + g_problems + a_problems;
    if (rc == CAIRN_OK)
        rc = cairn_stats_get(db, &s);
    if (rc == CAIRN_OK)
        rc = temp_list_get(db, &tl);
    if (rc != CAIRN_OK) {
        if (v.json)
            printf("]}\n");
        rc = cli_fail_db(ctx->cmd, db, rc, NULL);
        temp_free(&tl);
        cairn_close(db);
        return rc;
    }
    for (size_t i = 0; i < tl.n && !v.json; i++)
        printf("note: %s (%llu bytes): %s\n", tl.v[i].name, (unsigned long long)tl.v[i].bytes,
               temp_why(&tl.v[i]));
    if (v.json) {
        putchar(']');
        temp_json(&tl);
    }
    temp_free(&tl);
    if (v.json && have_head)
        printf(",\"head\":\"%s\",\"holes\":%llu,\"hole_seqs\":%llu",
               vr.head_proven ? "proven" : "not proven", (unsigned long long)vr.holes,
               (unsigned long long)vr.hole_seqs);
    if (v.json)
        printf(",\"first_bad_seq\":%llu,\"ok\":%s,\"records\":%llu,\"segments\":%llu,"
               "\"memory_index\":%s,\"graph\":%s,\"access\":%s}\n",
               (unsigned long long)first_bad, problems ? "false" : "true",
               (unsigned long long)s.records,
               (unsigned long long)(s.segments_active + s.segments_closed + s.segments_sealed),
               checked ? (mx_problems ? "\"damaged\"" : "\"verified\"") : "null",
               g_checked ? (g_problems ? "\"damaged\"" : "\"verified\"") : "null",
               a_checked ? (a_problems ? "\"damaged\"" : "\"verified\"") : "null");
    if (problems > 0) {
        fflush(stdout);
        fprintf(stderr, "cairn: verify: %llu problem(s)", (unsigned long long)problems);
        if (first_bad != 0)
            fprintf(stderr, "; the first seq that differs: %llu", (unsigned long long)first_bad);
        if (have_head && !vr.head_proven)
            fprintf(stderr, "; head %llu not proven", (unsigned long long)want.seq);
        else if (have_head)
            fprintf(stderr, "; head %llu proven", (unsigned long long)want.seq);
        fputc('\n', stderr);
        rc = CLI_EXIT_PROBLEMS;
    } else {
        if (!v.json)
            printf("ok: %llu records in %llu segments verified%s%s%s%s\n",
                   (unsigned long long)s.records,
                   (unsigned long long)(s.segments_active + s.segments_closed + s.segments_sealed),
                   checked ? ", memory index verified" : "",
                   g_checked ? ", graph file verified" : "",
                   a_checked ? ", access file verified" : "",
                   have_head ? ", head proven" : "");
        if (have_head && vr.holes > 0)
            printf("note: the chain went across %llu hole(s) of compactions (%llu seqs) as "
                   "they say: the records they stand for are gone, the chain before and after "
                   "each holds (README, \"Auditing\")\n",
                   (unsigned long long)vr.holes, (unsigned long long)vr.hole_seqs);
        rc = CLI_EXIT_OK;
    }
    cairn_close(db);
    return rc;
}

/* ---- stats ---------------------------------------------------------------- */

/* "123456 (120.6 KiB)" */
static void print_bytes(const char *key, uint64_t v)
{
    static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double d = (double)v;
    int u = -1;

    printf("%-19s %llu", key, (unsigned long long)v);
    while (d >= 1024.0 && u < 5) {
        d /= 1024.0;
        u++;
    }
    if (u >= 0)
        printf(" (%.1f %s)", d, units[u]);
    putchar('\n');
}

int cmd_stats(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"json", 0}, {"format", 1}, {NULL, 0}};
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cairn_stats s;
    cairn_mem_stats ms;
    temp_list tl = {NULL, 0, 0, 0};
    uint64_t unfinished = 0, nvec = 0;
    char vname[CAIRN_EMBEDDER_NAME_MAX + 1] = "";
    uint32_t vdim = 0;
    int json = 0;
    int rc = cli_output_args(ctx, spec, argc, argv, cmd_stats_help, &json);
    char ratio[32], t1[40], t2[40], id[33];

    if (rc >= 0)
        return rc;
    if (cli_open_read(ctx, &db) != CAIRN_OK)
        return CLI_EXIT_FAIL;
    rc = cairn_stats_get(db, &s);
    if (rc == CAIRN_OK)
        rc = temp_list_get(db, &tl);
    if (rc == CAIRN_OK)
        rc = cairn_mem_open(db, NULL, &mem);
    if (rc == CAIRN_OK && ctx->as_of_ms != 0) /* expiry as it was then */
        cairn_mem_set_clock(mem, ctx->as_of_ms);
    if (rc == CAIRN_OK)
        rc = cairn_mem_stats_get(mem, &ms);
    if (rc == CAIRN_OK) {
        unfinished = cairn_mem_unfinished(mem);
        cairn_mem_vectors(mem, vname, &vdim, &nvec);
    }
    if (rc != CAIRN_OK) {
        /* The memory layer's message names the file and row when it has one. */
        if (mem != NULL && cairn_mem_errmsg(mem)[0] != 0)
            rc = cli_fail(ctx->cmd, rc, "%s", cairn_mem_errmsg(mem));
        else
            rc = cli_fail_db(ctx->cmd, db, rc, NULL);
        temp_free(&tl);
        cairn_mem_close(mem);
        cairn_close(db);
        return rc;
    }
    cairn_mem_close(mem);
    cairn_close(db);
    cli_format_time(ms.oldest, t1, sizeof t1);
    cli_format_time(ms.newest, t2, sizeof t2);
    if (s.segments_sealed > 0 && s.sealed_bytes > 0)
        snprintf(ratio, sizeof ratio, "%.2f", (double)s.sealed_raw_bytes / (double)s.sealed_bytes);
    else
        snprintf(ratio, sizeof ratio, "%s", json ? "null" : "n/a");
    for (int i = 0; i < 16; i++)
        snprintf(id + 2 * i, 3, "%02x", s.store_id[i]);
    if (json) {
        printf("{\"records\":%llu,\"first_seq\":%llu,\"last_seq\":%llu,"
               "\"segments\":{\"active\":%llu,\"closed\":%llu,\"sealed\":%llu},"
               "\"bytes_on_disk\":%llu,\"log_bytes\":%llu,\"sealed_raw_bytes\":%llu,"
               "\"sealed_bytes\":%llu,\"compression_ratio\":%s,\"durability\":\"%s\","
               "\"batch_ms\":%u,\"segment_size\":%llu,\"generation\":%llu,",
               (unsigned long long)s.records, (unsigned long long)s.first_seq,
               (unsigned long long)s.last_seq, (unsigned long long)s.segments_active,
               (unsigned long long)s.segments_closed, (unsigned long long)s.segments_sealed,
               (unsigned long long)s.bytes_on_disk, (unsigned long long)s.log_bytes,
               (unsigned long long)s.sealed_raw_bytes, (unsigned long long)s.sealed_bytes, ratio,
               cli_durability_name(s.durability), (unsigned)s.batch_ms,
               (unsigned long long)s.segment_size, (unsigned long long)s.generation);
        printf("\"store_id\":\"%s\",\"lost_total\":%llu,\"lost_records\":", id,
               (unsigned long long)s.lost_total);
        if (s.recovered_lost_last > 0)
            printf("{\"first\":%llu,\"last\":%llu},", (unsigned long long)s.recovered_lost_first,
                   (unsigned long long)s.recovered_lost_last);
        else
            printf("null,");
        printf("\"memories\":{\"total\":%llu,\"byCategory\":{", (unsigned long long)ms.total);
        for (size_t i = 0; i < ms.n_categories; i++) {
            printf(i ? "," : "");
            cli_json_put_string(stdout, ms.by_category[i].name, strlen(ms.by_category[i].name));
            printf(":%llu", (unsigned long long)ms.by_category[i].count);
        }
        printf("},\"avgImportance\":%.6g,\"oldest\":%lld,\"newest\":%lld,\"deleted\":%llu,"
               "\"skipped\":%llu,\"unfinished\":%llu},",
               ms.avg_importance, (long long)ms.oldest, (long long)ms.newest,
               (unsigned long long)ms.deleted, (unsigned long long)ms.skipped,
               (unsigned long long)unfinished);
        printf("\"memory_index\":{\"bytes\":%llu,\"files\":%llu,\"covered_seq\":%llu,"
               "\"memories\":%llu,\"records_after\":%llu,\"note\":",
               (unsigned long long)ms.index_bytes, (unsigned long long)ms.index_files,
               (unsigned long long)ms.index_seq, (unsigned long long)ms.index_rows,
               (unsigned long long)ms.unindexed);
        if (ms.index_note[0])
            cli_json_put_string(stdout, ms.index_note, strlen(ms.index_note));
        else
            printf("null");
        printf("},\"vectors\":");
        if (vdim != 0) {
            printf("{\"embedder\":");
            cli_json_put_string(stdout, vname, strlen(vname));
            printf(",\"dim\":%u,\"count\":%llu}", (unsigned)vdim, (unsigned long long)nvec);
        } else {
            printf("null");
        }
        temp_json(&tl);
        printf("}\n");
        cairn_mem_stats_free(&ms);
        temp_free(&tl);
        return CLI_EXIT_OK;
    }
    printf("%-19s %s\n", "store id:", id);
    printf("%-19s %llu\n", "records:", (unsigned long long)s.records);
    if (s.recovered_lost_last > 0)
        printf("%-19s %llu..%llu (the log ends before what the MANIFEST knew was durable; "
               "run 'cairn verify')\n", "lost records:", (unsigned long long)s.recovered_lost_first,
               (unsigned long long)s.recovered_lost_last);
    if (s.lost_total > 0)
        printf("%-19s %llu (found lost and retired by writers, over the store's life)\n",
               "records retired:", (unsigned long long)s.lost_total);
    printf("%-19s %llu\n", "first seq:", (unsigned long long)s.first_seq);
    printf("%-19s %llu\n", "last seq:", (unsigned long long)s.last_seq);
    printf("%-19s %llu active, %llu closed, %llu sealed\n", "segments:",
           (unsigned long long)s.segments_active, (unsigned long long)s.segments_closed,
           (unsigned long long)s.segments_sealed);
    print_bytes("bytes on disk:", s.bytes_on_disk);
    print_bytes("log bytes:", s.log_bytes);
    printf("%-19s %s\n", "compression ratio:", ratio);
    printf("%-19s %s\n", "durability:", cli_durability_name(s.durability));
    printf("%-19s %u\n", "batch ms:", (unsigned)s.batch_ms);
    print_bytes("segment size:", s.segment_size);
    printf("%-19s %llu (%llu deleted)\n", "memories:", (unsigned long long)ms.total,
           (unsigned long long)ms.deleted);
    if (vdim != 0)
        printf("%-19s %llu of %s (%u dimensions)\n", "vectors:", (unsigned long long)nvec, vname,
               (unsigned)vdim);
    else
        printf("%-19s none (lexical only)\n", "vectors:");
    if (ms.total > 0) {
        printf("%-19s", "by category:");
        for (size_t i = 0; i < ms.n_categories; i++)
            printf(" %s %llu%s", ms.by_category[i].name,
                   (unsigned long long)ms.by_category[i].count,
                   i + 1 < ms.n_categories ? "," : "");
        printf("\n%-19s %.3f\n", "avg importance:", ms.avg_importance);
        printf("%-19s %s\n%-19s %s\n", "oldest memory:", t1, "newest memory:", t2);
    }
    if (ms.skipped > 0)
        printf("%-19s %llu (%llu of them of an import or forget cut short by a crash or a full "
               "disk: none of it applied)\n", "skipped records:", (unsigned long long)ms.skipped,
               (unsigned long long)unfinished);
    if (ms.index_bytes > 0) {
        print_bytes("memory index:", ms.index_bytes);
        printf("%-19s seq %llu, %llu memories in %llu file%s; %llu memory records after it\n",
               "  covers:", (unsigned long long)ms.index_seq, (unsigned long long)ms.index_rows,
               (unsigned long long)ms.index_files, ms.index_files == 1 ? "" : "s",
               (unsigned long long)ms.unindexed);
    } else {
        printf("%-19s none (%llu memory records replayed at open)\n", "memory index:",
               (unsigned long long)ms.unindexed);
    }
    if (ms.index_note[0])
        printf("%-19s %s\n", "  note:", ms.index_note);
    for (size_t i = 0; i < tl.n; i++)
        printf("%-19s %s, %llu bytes (%s)\n", "temp file:", tl.v[i].name,
               (unsigned long long)tl.v[i].bytes,
               tl.v[i].in_flight ? "a writer is live and may be writing it"
                                 : "left by a crash or a failed write; the next writer open "
                                   "removes it");
    cairn_mem_stats_free(&ms);
    temp_free(&tl);
    return CLI_EXIT_OK;
}
