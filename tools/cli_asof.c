/*
 * cli_asof.c - `--as-of TIME|SEQ` on the commands that read: the store as
 * it was at that moment. A view is made of the log up to the seq
 * (cairn_replay_ex with CAIRN_REPLAY_VIEW: the segments and the index
 * files that cover at most the seq are hard links, the segment holding it
 * is cut), the command runs on the view, and the view goes.
 */
#include "cli_asof.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The commands (and subcommands) that take --as-of. */
static int may_take(const char *cmd, const char *sub)
{
    static const char *const plain[] = {"recall", "get", "list", "context", "stats"};
    static const char *const subs[][3] = {{"episode", "get", "list"},
                                          {"causal", "path", "status"},
                                          {"pattern", "list", NULL},
                                          {"core", "show", NULL},
                                          {"stream", "list", NULL}};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        if (strcmp(cmd, plain[i]) == 0)
            return 1;
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++)
        if (strcmp(cmd, subs[i][0]) == 0 && sub != NULL &&
            (strcmp(sub, subs[i][1]) == 0 || (subs[i][2] && strcmp(sub, subs[i][2]) == 0)))
            return 1;
    return 0;
}

/* The moment's time: the TIME given, else that of the record at seq. A
 * seq a compaction's hole stands for (its last: a replay refuses the
 * others) takes the hole's time, that of the first record it replaced:
 * the records' own times are gone with them. */
static int moment_time(cairn_db *db, uint64_t seq, const char *when, int64_t *out)
{
    cairn_range rg = CAIRN_RANGE_INIT;
    cairn_iter *it = NULL;
    cairn_record rec;
    int64_t ts;
    int rc;

    if (!(when[0] >= '0' && when[0] <= '9' && strspn(when, "0123456789") == strlen(when)) &&
        cli_parse_time(when, cli_now_ms(), &ts) == 0) {
        *out = ts;
        return CAIRN_OK;
    }
    rg.seq_from = seq;
    rg.seq_to = seq;
    if ((rc = cairn_iter_open(db, &rg, &it)) != CAIRN_OK)
        return rc;
    rc = cairn_iter_next(it, &rec);
    if (rc == CAIRN_OK)
        *out = rec.ts_ms > 0 ? rec.ts_ms : 1;
    else if (rc == CAIRN_ENOTFOUND) /* no record stands for it: the replay says why */
        rc = CAIRN_OK, *out = 0;
    cairn_iter_close(it);
    return rc;
}

void cli_as_of_cleanup(const char *dir)
{
    DIR *d;
    struct dirent *de;
    if (dir == NULL || dir[0] == '\0' || (d = opendir(dir)) == NULL)
        return;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            unlinkat(dirfd(d), de->d_name, 0);
    closedir(d);
    rmdir(dir);
}

int cli_as_of_setup(cli_ctx *ctx, int *argc, char **argv, char *view, size_t cap)
{
    const char *when = NULL, *sub = NULL, *store = NULL;
    int k, out = 0, rc;
    uint64_t seq = 0;
    cairn_replay_report rep;
    cairn_db *db = NULL;
    char *end;

    view[0] = '\0';
    for (k = 0; k < *argc && strcmp(argv[k], "--") != 0; k++)
        if (strcmp(argv[k], "--as-of") == 0 || strncmp(argv[k], "--as-of=", 8) == 0)
            break;
    if (k == *argc || strcmp(argv[k], "--") == 0)
        return -1; /* not given: argv as it is */
    for (k = 0; k < *argc; k++) {
        if (strcmp(argv[k], "--") == 0) {
            while (k < *argc)
                argv[out++] = argv[k++];
            break;
        }
        if (strcmp(argv[k], "--as-of") == 0 && k + 1 < *argc) {
            when = argv[++k];
            continue;
        }
        if (strncmp(argv[k], "--as-of=", 8) == 0) {
            when = argv[k] + 8;
            continue;
        }
        if (strcmp(argv[k], "--as-of") == 0)
            return cli_usage_error(ctx->cmd, "--as-of needs TIME or SEQ");
        /* the command's own --store: taken here, so that the view's stays */
        if (strcmp(argv[k], "--store") == 0 && k + 1 < *argc) {
            store = argv[++k];
            continue;
        }
        if (strncmp(argv[k], "--store=", 8) == 0) {
            store = argv[k] + 8;
            continue;
        }
        if (sub == NULL && argv[k][0] != '-')
            sub = argv[k];
        argv[out++] = argv[k];
    }
    *argc = out;
    if (store != NULL)
        ctx->store = store;
    if (!may_take(ctx->cmd, sub))
        return cli_usage_error(ctx->cmd, "--as-of is for recall, get, list, context, stats, "
                               "episode get|list, causal path|status, pattern list, core show "
                               "and stream list");
    if ((rc = cli_open_read(ctx, &db)) != CAIRN_OK)
        return CLI_EXIT_FAIL;
    errno = 0;
    seq = strtoull(when, &end, 10);
    if (when[0] >= '0' && when[0] <= '9' && *end == '\0' && errno == 0) {
        if (seq == 0)
            rc = cli_usage_error(ctx->cmd, "--as-of: seq 0 is before the first record");
    } else {
        int64_t ts;
        if (cli_parse_time(when, cli_now_ms(), &ts) != 0)
            rc = cli_usage_error(ctx->cmd, "--as-of takes a seq or a time as dump's --until "
                                 "does (2026-11-28T10:00:00Z, 2026-11-28, 3h); got '%s'", when);
        else if ((rc = cairn_seq_at_time(db, ts, &seq)) != CAIRN_OK)
            rc = cli_fail_db(ctx->cmd, db, rc, "--as-of");
        else if (seq == 0)
            rc = cli_fail(ctx->cmd, CAIRN_ENOTFOUND, "--as-of %s: the log's first record is "
                          "later", when);
    }
    if (rc == CAIRN_OK && (rc = moment_time(db, seq, when, &ctx->as_of_ms)) != CAIRN_OK)
        rc = cli_fail_db(ctx->cmd, db, rc, "--as-of");
    if (rc != CAIRN_OK) {
        cairn_close(db);
        return rc;
    }
    /* The view beside the store (hard links need its file system), else
     * in $TMPDIR (copies). */
    snprintf(view, cap, "%s/.as-of-%ld-XXXXXX", ctx->store, (long)getpid());
    if (mkdtemp(view) == NULL) {
        const char *t = getenv("TMPDIR");
        snprintf(view, cap, "%s/cairn-as-of-%ld-XXXXXX", t && t[0] ? t : "/tmp", (long)getpid());
        if (mkdtemp(view) == NULL) {
            view[0] = '\0';
            cairn_close(db);
            return cli_fail(ctx->cmd, CAIRN_EIO, "--as-of: no directory for the view: %s",
                            strerror(errno));
        }
    }
    rc = cairn_replay_ex(db, seq, view, CAIRN_REPLAY_VIEW, &rep);
    if (rc != CAIRN_OK) {
        rc = cli_fail_db(ctx->cmd, db, rc, "--as-of");
        cairn_close(db);
        cli_as_of_cleanup(view);
        view[0] = '\0';
        return rc;
    }
    cairn_close(db);
    ctx->store = view;
    return CLI_EXIT_OK;
}
