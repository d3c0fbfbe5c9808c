/*
 * cmd_compact.c - `cairn compact` (drop what the retention policy no
 * longer keeps) and `cairn purge` (remove one memory's records now).
 */
#include <stdio.h>
#include <string.h>

#include "cli_json.h"
#include "commands.h"

const char cmd_compact_help[] =
    "usage: cairn compact [--dry-run] [--format text|json]\n"
    "\n"
    "Drop from the log the records the store's retention policy no longer\n"
    "keeps (`cairn config retain`), and say what went:\n"
    "  all (the default)  every record is kept, for audits and replay:\n"
    "                     nothing is dropped\n"
    "  live:GRACE         the records of memories that are no longer live\n"
    "                     (removed, forgotten, pruned, merged away, cleared)\n"
    "                     go once they went more than GRACE ago. Until then\n"
    "                     `cairn restore ID` brings such a memory back; after,\n"
    "                     it cannot.\n"
    "  events:AGE         events (`cairn log`) older than AGE go (events:30d)\n"
    "  events:SIZE        the oldest events of a namespace go while its events\n"
    "                     take more than SIZE (events:10GiB); events of the\n"
    "                     active segment stay until it is sealed\n"
    "Live memories, recall, search and the memory counts of stats (memories,\n"
    "deleted, skipped) answer the same before and after.\n"
    "A memory that an index file still holds live stays until the next\n"
    "checkpoint (`cairn checkpoint`) covers its going. Sealed segments are\n"
    "rewritten, each run of dropped records left as one small log.compacted\n"
    "record that says how many records and bytes it stands for; when the\n"
    "active segment holds records to drop it is closed and sealed first.\n"
    "Readers (in this process or another) are never stopped: they read the\n"
    "old files or the new ones, never a mix. Writers go on too: a compaction\n"
    "takes the writer lock only to swap its files in. One compaction runs at\n"
    "a time.\n"
    "A program that keeps the library open with its background threads\n"
    "compacts on its own once enough has gone (a quarter of the live\n"
    "memories, at least 1,000; with an event limit, a quarter more log);\n"
    "this tool never does: run `cairn compact` (from cron, say) for a store\n"
    "only the tool writes.\n"
    "\n"
    "Output (text): the policy, then \"records: B -> A\", \"bytes: B -> A\",\n"
    "\"dropped: N records (M bytes) of K memories\", and how many memories\n"
    "no longer live were kept, and why. Output (json): {\"retain\",\n"
    "\"dry_run\", \"records_before\", \"records_after\", \"bytes_before\",\n"
    "\"bytes_after\", \"dropped_records\", \"dropped_bytes\",\n"
    "\"memories_dropped\", \"memories_in_grace\", \"memories_pinned\",\n"
    "\"memories_needed\", \"events_dropped\", \"events_dropped_bytes\",\n"
    "\"segments_rewritten\", \"rolled\"}. Bytes are those of the segment files\n"
    "(with --dry-run, bytes after is an estimate).\n"
    "\n"
    "Options:\n"
    "  --dry-run      say what would go; change nothing\n"
    "  --format F     text (default) or json\n"
    "  --store DIR    the store (default: $CAIRN_STORE if set, else ./.cairn)\n"
    "\n"
    "Exit status: 0 success; 1 no store, another compaction running, store\n"
    "locked past --busy-timeout, a damaged segment (run cairn verify), I/O\n"
    "error; 64 usage error.\n";

const char cmd_purge_help[] =
    "usage: cairn purge ID [--format text|json]\n"
    "\n"
    "Remove memory ID from the store now, whatever the retention policy: every\n"
    "record of it (every time it was stored, updated or removed), its text and\n"
    "its vector go from every segment of the log and from the memory index,\n"
    "which is written anew. A live memory is removed first. A memory.purge\n"
    "record stays in the log with the id and the time, so an audit can account\n"
    "for the gap (`cairn dump --type memory.purge`). A purged memory cannot be\n"
    "restored. Purging it again (say, after the index could not be written)\n"
    "writes the memory index anew and reports 0 records. Other processes drop\n"
    "it at their next command; a process that still has an old file open\n"
    "keeps those bytes on disk until it lets go.\n"
    "\n"
    "Output (text): \"purged ID: N records (M bytes) from S segment file(s)\".\n"
    "Output (json): {\"id\", \"records\", \"bytes\", \"segments\", \"was_live\",\n"
    "\"marker_seq\"}.\n"
    "\n"
    "Options:\n"
    "  --format F     text (default) or json\n"
    "  --store DIR    the store (default: $CAIRN_STORE if set, else ./.cairn)\n"
    "\n"
    "Exit status: 0 purged; 1 no record of ID in the log (nor a purge of it),\n"
    "no store, store locked, I/O error; 64 usage error.\n";

/* Open the store to write and its memory engine. */
static int open_writer(cli_ctx *ctx, cairn_db **db, cairn_mem **mem)
{
    cairn_options o;
    char err[CAIRN_ERRMSG_MAX] = "";
    int rc;

    cli_options(ctx, &o); /* --busy-timeout */
    rc = cairn_open(db, ctx->store, &o, err, sizeof err);
    if (rc == CAIRN_ENOTFOUND)
        return cli_fail(ctx->cmd, rc, "no store at %s (run 'cairn init')", ctx->store);
    if (rc != CAIRN_OK)
        return cli_fail(ctx->cmd, rc, "%s", err[0] ? err : ctx->store);
    cli_warn_recovery(ctx, *db);
    rc = cairn_mem_open(*db, NULL, mem);
    if (rc != CAIRN_OK) {
        int r = cli_fail_db(ctx->cmd, *db, rc, "opening memories");
        cairn_close(*db);
        return r;
    }
    return CLI_EXIT_OK;
}

static int close_writer(cli_ctx *ctx, cairn_db *db, cairn_mem *mem, int exit_code)
{
    int rc;
    cairn_mem_close(mem);
    rc = cairn_close(db);
    if (rc != CAIRN_OK && exit_code == CLI_EXIT_OK)
        return cli_fail_db(ctx->cmd, NULL, rc, "closing the store");
    return exit_code;
}

static int mem_failed(cli_ctx *ctx, cairn_db *db, cairn_mem *mem, int rc)
{
    const char *msg = cairn_mem_errmsg(mem);
    int r = cli_fail(ctx->cmd, rc, "%s", msg[0] ? msg : cairn_strerror(rc));
    return close_writer(ctx, db, mem, r);
}

int cmd_compact(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"dry-run", 0}, {"format", 1}, {NULL, 0}};
    const char *name, *val;
    cairn_compact_report rep;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    char pol[96];
    cli_args a;
    int r, rc, json = 0, dry = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_compact_help);
        if (r == CLI_ARG_POS)
            return cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
        if (strcmp(name, "dry-run") == 0)
            dry = 1;
        else if ((r = cli_parse_format(ctx->cmd, val, &json)) >= 0)
            return r;
    }
    if ((rc = open_writer(ctx, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    if ((r = cairn_mem_compact(mem, dry, &rep)) != CAIRN_OK)
        return mem_failed(ctx, db, mem, r);
    cairn_retain_format(&rep.retain, pol, sizeof pol);
    if (json) {
        printf("{\"retain\":\"%s\",\"dry_run\":%s,\"records_before\":%llu,"
               "\"records_after\":%llu,\"bytes_before\":%llu,\"bytes_after\":%llu,"
               "\"dropped_records\":%llu,\"dropped_bytes\":%llu,\"memories_dropped\":%llu,"
               "\"memories_in_grace\":%llu,\"memories_pinned\":%llu,\"memories_needed\":%llu,"
               "\"events_dropped\":%llu,\"events_dropped_bytes\":%llu,"
               "\"segments_rewritten\":%llu,\"rolled\":%s}\n",
               pol, dry ? "true" : "false", (unsigned long long)rep.records_before,
               (unsigned long long)rep.records_after, (unsigned long long)rep.bytes_before,
               (unsigned long long)rep.bytes_after, (unsigned long long)rep.dropped,
               (unsigned long long)rep.dropped_bytes, (unsigned long long)rep.memories_dropped,
               (unsigned long long)rep.memories_in_grace,
               (unsigned long long)rep.memories_pinned, (unsigned long long)rep.memories_needed,
               (unsigned long long)rep.events_dropped,
               (unsigned long long)rep.events_dropped_bytes, (unsigned long long)rep.rewritten,
               rep.rolled ? "true" : "false");
    } else {
        printf("retain: %s%s\n", pol, dry ? " (dry run: nothing changed)" : "");
        if (rep.retain.memories == CAIRN_RETAIN_ALL && rep.retain.events_max_age_ms == 0 &&
            rep.retain.events_max_bytes == 0)
            printf("every record is kept (`cairn config retain live:GRACE` to drop those of "
                   "memories no longer live, events:AGE or events:SIZE to limit events)\n");
        printf("records: %llu -> %llu\n", (unsigned long long)rep.records_before,
               (unsigned long long)rep.records_after);
        printf("bytes: %llu -> %s%llu\n", (unsigned long long)rep.bytes_before,
               dry ? "about " : "", (unsigned long long)rep.bytes_after);
        printf("dropped: %llu records (%llu bytes) of %llu memories\n",
               (unsigned long long)(rep.dropped - rep.events_dropped),
               (unsigned long long)(rep.dropped_bytes - rep.events_dropped_bytes),
               (unsigned long long)rep.memories_dropped);
        if (rep.retain.events_max_age_ms != 0 || rep.retain.events_max_bytes != 0)
            printf("dropped: %llu events (%llu bytes) past the event limits\n",
                   (unsigned long long)rep.events_dropped,
                   (unsigned long long)rep.events_dropped_bytes);
        if (rep.memories_in_grace > 0)
            printf("kept: %llu memories no longer live, gone less than the grace period ago "
                   "(cairn restore still brings them back)\n",
                   (unsigned long long)rep.memories_in_grace);
        if (rep.memories_pinned > 0)
            printf("kept: %llu memories no longer live that an index file still holds "
                   "(run cairn checkpoint, then compact again)\n",
                   (unsigned long long)rep.memories_pinned);
        if (rep.memories_needed > 0)
            printf("kept: %llu memories no longer live whose records replay or restore still "
                   "need (the store's first vector, a second store of their id, an earlier "
                   "life kept)\n",
                   (unsigned long long)rep.memories_needed);
        if (rep.rolled)
            printf("the active segment was closed and sealed to compact it\n");
    }
    return close_writer(ctx, db, mem, CLI_EXIT_OK);
}

int cmd_purge(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"format", 1}, {NULL, 0}};
    const char *name, *val, *id = NULL;
    cairn_purge_report rep;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cli_args a;
    int r, rc, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_purge_help);
        if (r == CLI_ARG_POS) {
            if (id != NULL)
                return cli_usage_error(ctx->cmd, "one ID only");
            id = val;
        } else if ((r = cli_parse_format(ctx->cmd, val, &json)) >= 0) {
            return r;
        }
    }
    if (id == NULL)
        return cli_usage_error(ctx->cmd, "missing ID");
    if ((rc = open_writer(ctx, &db, &mem)) != CLI_EXIT_OK)
        return rc;
    if ((r = cairn_mem_purge(mem, id, &rep)) != CAIRN_OK)
        return mem_failed(ctx, db, mem, r);
    if (json) {
        printf("{\"id\":");
        cli_json_put_string(stdout, id, strlen(id));
        printf(",\"records\":%llu,\"bytes\":%llu,\"segments\":%llu,\"was_live\":%s,"
               "\"marker_seq\":%llu}\n",
               (unsigned long long)rep.records, (unsigned long long)rep.bytes,
               (unsigned long long)rep.segments, rep.was_live ? "true" : "false",
               (unsigned long long)rep.marker_seq);
    } else {
        printf("purged %s: %llu records (%llu bytes) from %llu segment file(s)%s\n", id,
               (unsigned long long)rep.records, (unsigned long long)rep.bytes,
               (unsigned long long)rep.segments, rep.was_live ? "; it was live: removed" : "");
    }
    return close_writer(ctx, db, mem, CLI_EXIT_OK);
}
