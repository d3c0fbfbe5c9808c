/*
 * cmd_log.c - `cairn log` (append JSON records) and `cairn dump` (print them
 * as JSON lines).
 *
 * log reads stdin with read(2) into a growable buffer rather than stdio, so
 * it knows exactly when every complete line it holds has been appended: only
 * then, and only if poll() says nothing more is waiting on fd 0, does it
 * call cairn_flush() to make the records visible to other processes. A
 * piped file therefore costs one append batch per read and no flushes until
 * the end, while a slow producer's lines show up in `cairn dump` at once.
 * Lines may be as long as a record may be (CAIRN_RECORD_MAX).
 *
 * Invariant of the stdin loop: the entries of the pending batch point into
 * the read buffer, so the batch is committed before the buffer is compacted
 * or grown.
 */
#define _GNU_SOURCE /* ppoll: the wait of dump --follow */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_json.h"
#include "jpath.h"
#include "commands.h"

const char cmd_log_help[] =
    "usage: cairn log [--namespace NS] [--type T] [--quiet] [--format text|json] [JSON...]\n"
    "\n"
    "Append records to the store, which is created with default settings if it\n"
    "does not exist. Each JSON argument is one record; without arguments each\n"
    "line of stdin is one record and blank lines are skipped. A record must be\n"
    "one complete JSON value (RFC 8259); whitespace around it is dropped.\n"
    "\n"
    "The store is opened, and its writer lock taken, before stdin is read, so\n"
    "`producer | cairn log` is the store's one writer while it runs. Lines are\n"
    "committed as they arrive: whenever no more input is waiting, the records\n"
    "read so far are written to the log, where readers (`cairn dump`) see them.\n"
    "The store's durability mode decides when they are fsynced; all of them are\n"
    "at exit, and on SIGINT, SIGTERM or SIGHUP (a partial last line is dropped).\n"
    "\n"
    "Options:\n"
    "  --namespace NS  namespace of the records (default: the empty one, as for\n"
    "                  memories; <= 255 bytes)\n"
    "  --type T        record type (default: event): a name of the engine's, a\n"
    "                  number 1..65535, or a name of your own (tool_call: 1..64\n"
    "                  of a-z 0-9 _ . -, a letter first), registered in the\n"
    "                  store's MANIFEST at its first use and numbered from 32768;\n"
    "                  dump prints it by that name\n"
    "  --quiet         print only the number of records appended, at the end\n"
    "  --format F      text (default): one sequence number a line; json: one\n"
    "                  {\"seq\":N} object a line, and {\"count\":N} for --quiet\n"
    "  --store DIR     the store (default: $CAIRN_STORE if set, else ./.cairn)\n"
    "  --              end of options (e.g. before a JSON argument such as -1)\n"
    "\n"
    "Output: the sequence number of each record appended, one per line.\n"
    "\n"
    "Arguments are all checked first and appended as one batch: all or none.\n"
    "On stdin, invalid JSON on line N stops with \"line N: invalid JSON\"; every\n"
    "line before it stays committed.\n"
    "\n"
    "Exit status: 0 success; 1 invalid JSON, a record over 16 MiB, the store\n"
    "locked by another writer (the message names its pid), I/O error; 64 usage\n"
    "error.\n";

const char cmd_dump_help[] =
    "usage: cairn dump [--since TIME] [--until TIME] [--from-seq N] [--to-seq N]\n"
    "                  [--type T] [--namespace NS] [--where PATH=VALUE]...\n"
    "                  [--format jsonl|csv] [--follow]\n"
    "\n"
    "Print the records of the store in sequence order, one JSON object a line:\n"
    "  {\"seq\":1,\"ts\":\"2026-11-22T05:04:45.123Z\",\"type\":\"event\",\"ns\":\"\",\n"
    "   \"payload\":{...}}\n"
    "\"type\" is the type's name, or its number when it has none. A payload that\n"
    "is not valid JSON (the C API may store any bytes) is printed as the string\n"
    "\"payload_text\" instead of \"payload\"; a binary trailer as base64 in \"bin\".\n"
    "The store is opened read-only, so dump works while a writer runs; it prints\n"
    "the records committed when it starts, and with --follow every record\n"
    "committed after, as it comes, until SIGINT, SIGTERM or a closed pipe (exit\n"
    "0). It waits with an inotify watch of the store, not by polling; a\n"
    "writer's records show when it flushes them (at once with durability full,\n"
    "within batch_ms otherwise).\n"
    "\n"
    "Options (bounds are inclusive; each one narrows the selection):\n"
    "  --since TIME    records committed at or after TIME\n"
    "  --until TIME    records committed at or before TIME\n"
    "  --from-seq N    records with sequence number >= N\n"
    "  --to-seq N      records with sequence number <= N\n"
    "  --type T        records of type T: a name (event, or one `log --type`\n"
    "                  registered) or a number 1..65535\n"
    "  --namespace NS  records of namespace NS (\"\" is the default one)\n"
    "  --where PATH=VALUE  records whose JSON payload holds VALUE at PATH; may\n"
    "                  be given again (all must hold). PATH: member names\n"
    "                  joined by dots, each may be followed by [N] for an\n"
    "                  array element (tool.args[0].name); a name cannot hold\n"
    "                  '.', '[' or '='. VALUE: JSON (42, true, null,\n"
    "                  \"quoted text\", {...}) compared as JSON, else plain text\n"
    "                  compared with a string\n"
    "  --format F      jsonl (default): the lines above; csv: a header, then\n"
    "                  seq,ts,type,ns,payload,bin rows (RFC 4180, CRLF; payload\n"
    "                  as JSON text, bin the binary trailer in base64)\n"
    "  --follow        keep printing records as they are committed\n"
    "  --store DIR     the store (default: $CAIRN_STORE if set, else ./.cairn)\n"
    "\n"
    "TIME is one of:\n"
    "  2026-11-22, 2026-11-22T05:04, 2026-11-22T05:04:45, 2026-11-22T05:04:45.123\n"
    "      ISO 8601, UTC; may end in Z or an offset such as +02:00 or -0500\n"
    "  @1795237485123   milliseconds since the Unix epoch\n"
    "  30s, 15m, 2h, 7d, 2w, 500ms   that long ago\n"
    "  now\n"
    "\n"
    "Exit status: 0 success (also when nothing matches); 1 no store, I/O error\n"
    "or a damaged record (see `cairn verify`); 64 usage error.\n";

/* ---- log ------------------------------------------------------------------ */

#define LOG_BUF_INIT (256u * 1024u)       /* first size of the stdin buffer */
#define LOG_LINE_MAX ((size_t)CAIRN_RECORD_MAX) /* longest line held in memory */
#define LOG_BATCH_MAX 4096                /* records per cairn_append_batch */

typedef struct log_state {
    const char *cmd;
    cairn_db *db;
    uint16_t type;
    const char *ns;
    size_t ns_len;
    int quiet;
    int json;
    const char *unit;   /* "line" or "argument", for messages */
    int atomic;         /* arguments: all or none, never retried one by one */
    uint64_t count;     /* records appended */
    int unflushed;      /* appended since the last cairn_flush() */
    cairn_entry *batch; /* pending records (pointing into the input) */
    uint64_t *where;    /* line/argument number of each pending record */
    size_t n;
    size_t cap;
} log_state;

/* SIGINT/SIGTERM/SIGHUP: the handler (SA_RESTART, so the engine's system
 * calls are never cut short) records the signal and wakes the poll() that
 * waits for input through a self-pipe; the loop then commits and closes. */
static volatile sig_atomic_t log_signal;
static int wake_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    ssize_t w;

    log_signal = sig;
    if (wake_pipe[1] >= 0) {
        w = write(wake_pipe[1], "", 1);
        (void)w;
    }
    errno = saved;
}

static void install_signals(void)
{
    struct sigaction sa;

    if (pipe(wake_pipe) == 0) {
        for (int i = 0; i < 2; i++) {
            fcntl(wake_pipe[i], F_SETFL, fcntl(wake_pipe[i], F_GETFL) | O_NONBLOCK);
            fcntl(wake_pipe[i], F_SETFD, FD_CLOEXEC);
        }
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a closed stdout must not lose buffered records */
}

/* Block until stdin is readable (or at EOF) or a signal came. */
static void wait_input(void)
{
    struct pollfd p[2];

    p[0].fd = 0;
    p[0].events = POLLIN;
    p[1].fd = wake_pipe[0];
    p[1].events = POLLIN;
    while (!log_signal) {
        p[0].revents = p[1].revents = 0;
        if (poll(p, wake_pipe[0] >= 0 ? 2 : 1, -1) >= 0 || errno != EINTR)
            return; /* ready, or an error that read() will report */
    }
}

static void print_seqs(log_state *st, uint64_t first, size_t n)
{
    st->count += n;
    st->unflushed = 1;
    if (st->quiet)
        return;
    for (size_t i = 0; i < n; i++)
        printf(st->json ? "{\"seq\":%llu}\n" : "%llu\n", (unsigned long long)(first + i));
}

/* Append the pending records. A batch that the engine refuses as a whole
 * (one record too big) is retried record by record, so every record before
 * the bad one is committed and the message names its line. */
static int commit(log_state *st)
{
    uint64_t seq;
    char where[48];
    int rc;

    if (st->n == 0)
        return CLI_EXIT_OK;
    rc = cairn_append_batch(st->db, st->batch, st->n, &seq);
    if (rc == CAIRN_OK) {
        print_seqs(st, seq, st->n);
        st->n = 0;
        return CLI_EXIT_OK;
    }
    if ((rc == CAIRN_EINVAL || rc == CAIRN_ETOOBIG) && !st->atomic) {
        for (size_t i = 0; i < st->n; i++) {
            rc = cairn_append(st->db, &st->batch[i], &seq);
            if (rc != CAIRN_OK) {
                snprintf(where, sizeof where, "%s %llu", st->unit,
                         (unsigned long long)st->where[i]);
                st->n = 0;
                if (rc == CAIRN_ETOOBIG)
                    return cli_fail(st->cmd, rc, "%s: record larger than %u bytes", where,
                                    CAIRN_RECORD_MAX);
                return cli_fail_db(st->cmd, st->db, rc, where);
            }
            print_seqs(st, seq, 1);
        }
        st->n = 0;
        return CLI_EXIT_OK;
    }
    st->n = 0;
    return cli_fail_db(st->cmd, st->db, rc, NULL);
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Check one line or argument and queue it. Blank lines are skipped
 * (blank arguments are errors). */
static int take(log_state *st, const char *s, size_t len, uint64_t where, int blank_ok)
{
    cairn_entry *e;
    size_t off;

    while (len > 0 && is_space(s[0])) {
        s++;
        len--;
    }
    while (len > 0 && is_space(s[len - 1]))
        len--;
    if (len == 0 && blank_ok)
        return CLI_EXIT_OK;
    if (cli_json_validate(s, len, &off) != 0) {
        int rc = commit(st); /* everything before it stays */
        if (rc != CLI_EXIT_OK)
            return rc;
        if (len == 0)
            return cli_fail(st->cmd, CAIRN_EINVAL, "%s %llu: invalid JSON (empty)", st->unit,
                            (unsigned long long)where);
        if (off >= len)
            return cli_fail(st->cmd, CAIRN_EINVAL, "%s %llu: invalid JSON (ends early)",
                            st->unit, (unsigned long long)where);
        return cli_fail(st->cmd, CAIRN_EINVAL, "%s %llu: invalid JSON at column %zu", st->unit,
                        (unsigned long long)where, off + 1);
    }
    if (st->n == st->cap) {
        int rc = commit(st);
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    e = &st->batch[st->n];
    e->type = st->type;
    e->ns = st->ns;
    e->ns_len = st->ns_len;
    e->json = s;
    e->json_len = len;
    e->bin = NULL;
    e->bin_len = 0;
    st->where[st->n++] = where;
    return CLI_EXIT_OK;
}

/* Make appended records visible to other processes (and seq numbers to a
 * pipe reader) when nothing more is waiting on stdin. */
static int publish_if_idle(log_state *st)
{
    struct pollfd p;
    int rc;

    if (!st->unflushed)
        return CLI_EXIT_OK;
    p.fd = 0;
    p.events = POLLIN;
    p.revents = 0;
    if (poll(&p, 1, 0) > 0)
        return CLI_EXIT_OK; /* more input (or EOF) is ready: keep batching */
    rc = cairn_flush(st->db);
    if (rc != CAIRN_OK)
        return cli_fail_db(st->cmd, st->db, rc, NULL);
    fflush(stdout);
    st->unflushed = 0;
    return CLI_EXIT_OK;
}

static int log_stdin(log_state *st)
{
    size_t cap = LOG_BUF_INIT, len = 0, start = 0;
    size_t scan = 0; /* buf[start..scan) holds no newline: a long line is scanned once */
    uint64_t lineno = 0;
    int eof = 0, rc = CLI_EXIT_OK;
    char *buf = malloc(cap), *nl;

    if (buf == NULL)
        return cli_fail(st->cmd, CAIRN_ENOMEM, "no memory for the input buffer");
    for (;;) {
        ssize_t got;

        while ((nl = memchr(buf + scan, '\n', len - scan)) != NULL) {
            rc = take(st, buf + start, (size_t)(nl - (buf + start)), ++lineno, 1);
            if (rc != CLI_EXIT_OK)
                goto out;
            start = scan = (size_t)(nl - buf) + 1;
        }
        scan = len;
        if (eof || log_signal) {
            /* At EOF a last line without a newline counts; after a signal a
             * partial line is dropped. */
            if (eof && start < len) {
                rc = take(st, buf + start, len - start, ++lineno, 1);
                if (rc != CLI_EXIT_OK)
                    goto out;
            }
            rc = commit(st);
            goto out;
        }
        rc = commit(st);
        if (rc != CLI_EXIT_OK)
            goto out;
        if (start > 0) {
            memmove(buf, buf + start, len - start);
            len -= start;
            scan -= start;
            start = 0;
        }
        if (len == cap) {
            char *nb;
            if (cap > LOG_LINE_MAX) {
                rc = cli_fail(st->cmd, CAIRN_ETOOBIG, "line %llu: longer than %zu bytes",
                              (unsigned long long)lineno + 1, LOG_LINE_MAX);
                goto out;
            }
            cap = cap * 2 > LOG_LINE_MAX + 1 ? LOG_LINE_MAX + 1 : cap * 2;
            nb = realloc(buf, cap);
            if (nb == NULL) {
                rc = cli_fail(st->cmd, CAIRN_ENOMEM, "no memory for line %llu",
                              (unsigned long long)lineno + 1);
                goto out;
            }
            buf = nb;
        }
        rc = publish_if_idle(st);
        if (rc != CLI_EXIT_OK)
            goto out;
        wait_input();
        if (log_signal)
            continue; /* the loop top commits and stops */
        got = read(0, buf + len, cap - len);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            rc = cli_fail(st->cmd, CAIRN_EIO, "reading stdin: %s", strerror(errno));
            goto out;
        }
        if (got == 0)
            eof = 1;
        len += (size_t)got;
    }
out:
    free(buf);
    return rc;
}

static int log_args(log_state *st, int n, const char **args)
{
    size_t off, len, k;

    /* All or none: check every argument before appending any. */
    for (int i = 0; i < n; i++) {
        len = strlen(args[i]);
        for (k = 0; k < len && is_space(args[i][k]); k++)
            ;
        if (k == len)
            return cli_fail(st->cmd, CAIRN_EINVAL, "argument %d: invalid JSON (empty)", i + 1);
        if (cli_json_validate(args[i], len, &off) != 0) {
            if (off >= len)
                return cli_fail(st->cmd, CAIRN_EINVAL, "argument %d: invalid JSON (ends early)",
                                i + 1);
            return cli_fail(st->cmd, CAIRN_EINVAL, "argument %d: invalid JSON at column %zu",
                            i + 1, off + 1);
        }
    }
    for (int i = 0; i < n; i++) {
        int rc = take(st, args[i], strlen(args[i]), (uint64_t)i + 1, 0);
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    return commit(st);
}

int cmd_log(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {
        {"namespace", 1}, {"type", 1}, {"quiet", 0}, {"format", 1}, {NULL, 0}};
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX];
    log_state st;
    cli_args a;
    const char *name, *val, *type_arg = NULL;
    const char **pos;
    int npos = 0, r, rc;

    memset(&st, 0, sizeof st);
    st.cmd = ctx->cmd;
    st.type = (uint16_t)CAIRN_REC_EVENT;
    st.ns = ""; /* the memories' default namespace too */
    pos = calloc((size_t)argc + 1, sizeof *pos);
    if (pos == NULL)
        return cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        rc = CLI_EXIT_USAGE;
        if (r == CLI_ARG_ERR)
            goto done;
        if (r == CLI_ARG_HELP) {
            rc = cli_help(cmd_log_help);
            goto done;
        }
        if (r == CLI_ARG_POS) {
            pos[npos++] = val;
        } else if (strcmp(name, "namespace") == 0) {
            if (strlen(val) > CAIRN_NS_MAX) {
                cli_usage_error(ctx->cmd, "namespace longer than %u bytes", CAIRN_NS_MAX);
                goto done;
            }
            st.ns = val;
        } else if (strcmp(name, "type") == 0) {
            type_arg = val; /* a name of the store's is registered once it is open */
        } else if (strcmp(name, "quiet") == 0) {
            st.quiet = 1;
        } else if (strcmp(name, "format") == 0) {
            if (cli_parse_format(ctx->cmd, val, &st.json) >= 0)
                goto done;
        }
    }
    st.ns_len = strlen(st.ns);
    st.cap = npos > 0 ? (size_t)npos : LOG_BATCH_MAX;
    st.batch = calloc(st.cap, sizeof *st.batch);
    st.where = calloc(st.cap, sizeof *st.where);
    if (st.batch == NULL || st.where == NULL) {
        rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
        goto done;
    }

    /* Open (and lock) first, then read: a pipe's writer holds the store. */
    o.create = 1;
    err[0] = '\0';
    o.busy_timeout_ms = ctx->busy_timeout_ms;
    rc = cairn_open(&st.db, ctx->store, &o, err, sizeof err);
    if (rc != CAIRN_OK) {
        rc = cli_fail(ctx->cmd, rc, "%s", err[0] ? err : ctx->store);
        goto done;
    }
    cli_warn_recovery(ctx, st.db);
    if (type_arg != NULL && cairn_record_type_parse(type_arg, &st.type) != CAIRN_OK &&
        (r = cairn_type_register(st.db, type_arg, &st.type)) != CAIRN_OK) {
        rc = cli_fail_db(ctx->cmd, st.db, r, "--type");
        cairn_close(st.db);
        goto done;
    }
    install_signals();

    if (npos > 0) {
        st.unit = "argument";
        st.atomic = 1;
        rc = log_args(&st, npos, pos);
    } else {
        st.unit = "line";
        rc = log_stdin(&st);
    }
    if (rc == CLI_EXIT_OK) {
        int s = cairn_sync(st.db);
        if (s != CAIRN_OK)
            rc = cli_fail_db(ctx->cmd, st.db, s, NULL);
    }
    r = cairn_close(st.db); /* flushes and syncs what an error path left */
    if (r != CAIRN_OK && rc == CLI_EXIT_OK)
        rc = cli_fail(ctx->cmd, r, "closing %s failed", ctx->store);
    if (rc == CLI_EXIT_OK && st.quiet)
        printf(st.json ? "{\"count\":%llu}\n" : "%llu\n", (unsigned long long)st.count);
    if (log_signal) {
        int sig = log_signal;
        fflush(stdout);
        signal(sig, SIG_DFL);
        raise(sig);
    }
done:
    free(st.batch);
    free(st.where);
    free(pos);
    return rc;
}

/* ---- dump ----------------------------------------------------------------- */

/* One --where: a path into the payload and the value that must be there. */
typedef struct where {
    const char *path;  /* as given, up to the '=' */
    size_t path_len;
    cJSON *json;       /* VALUE as JSON, or NULL: plain text */
    const char *text;  /* VALUE as given */
} where;

/* Does s[0..n) hold the text t? */
static int holds(const char *s, size_t n, const char *t)
{
    size_t k = strlen(t);
    if (k == 0)
        return 1;
    if (n < k)
        return 0;
    for (const char *p = s; k <= n - (size_t)(p - s);) {
        const char *q = memchr(p, t[0], n - (size_t)(p - s) - k + 1);
        if (q == NULL)
            return 0;
        if (memcmp(q, t, k) == 0)
            return 1;
        p = q + 1;
    }
    return 0;
}

/* Does the record's payload satisfy every --where? */
static int matches(const cairn_record *r, const where *w, size_t nw)
{
    cJSON *doc = NULL;
    int ok = 1;
    if (nw == 0)
        return 1;
    /* Text the payload must hold for a plain-text VALUE, before parsing: a
     * payload without it (and without escapes, which may spell it) cannot
     * match. */
    for (size_t i = 0; i < nw; i++)
        if (w[i].json == NULL && memchr(r->json, '\\', r->json_len) == NULL &&
            !holds(r->json, r->json_len, w[i].text))
            return 0;
    if ((doc = cJSON_ParseWithLength(r->json, r->json_len)) == NULL)
        return 0;
    for (size_t i = 0; ok && i < nw; i++) {
        const cJSON *v = cairn__jpath_get(doc, w[i].path, w[i].path_len);
        ok = cairn__jpath_test(v, CAIRN__JPATH_EQ, w[i].json, w[i].text, 0);
    }
    cJSON_Delete(doc);
    return ok;
}

/* The store whose type names dump prints. */
static cairn_db *names_db;

/* The record's type name (the engine's or the store's), else its number;
 * returns whether it has a name. */
static int type_name(const cairn_record *r, char *buf, size_t cap)
{
    return cairn_type_name(names_db, r->type, buf, cap);
}

static void dump_record(const cairn_record *r)
{
    char ts[48], tname[CAIRN_TYPE_NAME_MAX + 1];
    size_t off;

    cli_format_time(r->ts_ms, ts, sizeof ts);
    printf("{\"seq\":%llu,\"ts\":\"%s\",\"type\":", (unsigned long long)r->seq, ts);
    if (type_name(r, tname, sizeof tname))
        cli_json_put_string(stdout, tname, strlen(tname));
    else
        printf("%u", (unsigned)r->type);
    fputs(",\"ns\":", stdout);
    cli_json_put_string(stdout, r->ns, r->ns_len);
    if (cli_json_check(r->json, r->json_len, &off) == 0) {
        fputs(",\"payload\":", stdout);
        cli_json_put_compact(stdout, r->json, r->json_len);
    } else {
        fputs(",\"payload_text\":", stdout);
        cli_json_put_string(stdout, r->json, r->json_len);
    }
    if (r->bin_len > 0) {
        fputs(",\"bin\":\"", stdout);
        cli_base64_put(stdout, r->bin, r->bin_len);
        fputc('"', stdout);
    }
    fputs("}\n", stdout);
}

/* A CSV field (RFC 4180): quoted, quotes doubled. */
static void csv_put(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            putchar('"');
        putchar(s[i]);
    }
    putchar('"');
}

static void dump_csv(const cairn_record *r)
{
    char ts[48], tn[16];
    size_t off;
    cli_format_time(r->ts_ms, ts, sizeof ts);
    type_name(r, tn, sizeof tn);
    printf("%llu,%s,%s,", (unsigned long long)r->seq, ts, tn);
    csv_put(r->ns, r->ns_len);
    putchar(',');
    if (cli_json_check(r->json, r->json_len, &off) == 0) {
        /* compact JSON text, then quoted */
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (m != NULL) {
            cli_json_put_compact(m, r->json, r->json_len);
            fclose(m);
            csv_put(buf, len);
        }
        free(buf);
    } else {
        csv_put(r->json, r->json_len);
    }
    putchar(',');
    if (r->bin_len > 0) { /* the binary trailer, base64 */
        putchar('"');
        cli_base64_put(stdout, r->bin, r->bin_len);
        putchar('"');
    }
    fputs("\r\n", stdout); /* RFC 4180 */
}

static volatile sig_atomic_t dump_stop;
static sigset_t wait_mask; /* the mask in the wait: the stop signals let through */

static void on_dump_signal(int sig)
{
    (void)sig;
    dump_stop = 1;
}

/* Wait for the store to change: 1 to look again, 0 to stop (a stop signal,
 * or the reader of stdout went away). */
static int wait_more(cairn_follow *fo)
{
    struct pollfd p[2] = {{cairn_follow_fd(fo), POLLIN, 0}, {1, 0, 0}};
    struct timespec t = {0, 50 * 1000000L}; /* without inotify: a look every 50 ms */
    int r;
    if (dump_stop)
        return 0;
    r = ppoll(p[0].fd >= 0 ? p : p + 1, p[0].fd >= 0 ? 2 : 1, p[0].fd >= 0 ? NULL : &t,
              &wait_mask);
    if (r < 0)
        return !dump_stop;
    return !(p[1].revents & (POLLERR | POLLHUP | POLLNVAL)) && !dump_stop;
}

int cmd_dump(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"since", 1},     {"until", 1},  {"from-seq", 1},
                                       {"to-seq", 1},    {"type", 1},   {"namespace", 1},
                                       {"where", 1},     {"format", 1}, {"follow", 0},
                                       {NULL, 0}};
    static char outbuf[1 << 16];
    cairn_range range = CAIRN_RANGE_INIT;
    int64_t now = cli_now_ms();
    cairn_db *db = NULL;
    cairn_follow *fo = NULL;
    cairn_record rec;
    cli_args a;
    const char *name, *val, *ns = NULL, *type_arg = NULL;
    where *w = NULL;
    size_t nw = 0;
    uint16_t type;
    int r, rc, csv = 0, follow = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR || r == CLI_ARG_HELP || r == CLI_ARG_POS) {
            for (size_t i = 0; i < nw; i++)
                cJSON_Delete(w[i].json);
            free(w);
            if (r == CLI_ARG_HELP)
                return cli_help(cmd_dump_help);
            return r == CLI_ARG_ERR ? CLI_EXIT_USAGE
                                    : cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
        }
        if (strcmp(name, "since") == 0 || strcmp(name, "until") == 0) {
            int64_t t;
            if (cli_parse_time(val, now, &t) != 0)
                return cli_usage_error(ctx->cmd,
                                       "invalid time '%s' for --%s (see 'cairn help dump')", val,
                                       name);
            if (name[0] == 's')
                range.ts_from = t;
            else
                range.ts_to = t;
        } else if (strcmp(name, "from-seq") == 0 || strcmp(name, "to-seq") == 0) {
            uint64_t v;
            if (cli_parse_u64(val, UINT64_MAX, &v) != 0)
                return cli_usage_error(ctx->cmd, "invalid sequence number '%s' for --%s", val,
                                       name);
            if (name[0] == 'f')
                range.seq_from = v;
            else
                range.seq_to = v;
        } else if (strcmp(name, "type") == 0) {
            type_arg = val; /* a name of the store's is looked up once it is open */
        } else if (strcmp(name, "namespace") == 0) {
            ns = val;
        } else if (strcmp(name, "format") == 0) {
            if (strcmp(val, "jsonl") != 0 && strcmp(val, "csv") != 0 && strcmp(val, "json") != 0)
                return cli_usage_error(ctx->cmd, "--format takes jsonl or csv, not '%s'", val);
            csv = val[0] == 'c';
        } else if (strcmp(name, "follow") == 0) {
            follow = 1;
        } else if (strcmp(name, "where") == 0) {
            const char *eq = strchr(val, '=');
            where *nw2;
            if (eq == NULL || eq == val)
                return cli_usage_error(ctx->cmd, "--where takes PATH=VALUE, not '%s'", val);
            if ((nw2 = realloc(w, (nw + 1) * sizeof *w)) == NULL)
                return cli_fail(ctx->cmd, CAIRN_ENOMEM, "out of memory");
            w = nw2;
            w[nw].path = val;
            w[nw].path_len = (size_t)(eq - val);
            w[nw].text = eq + 1;
            w[nw].json = cJSON_ParseWithOpts(eq + 1, NULL, 1); /* all of it JSON, else text */
            nw++;
        }
    }
    setvbuf(stdout, outbuf, follow ? _IOLBF : _IOFBF, sizeof outbuf);
    rc = cli_open_read(ctx, &db);
    if (rc != CAIRN_OK) {
        rc = CLI_EXIT_FAIL;
        goto done;
    }
    names_db = db;
    if (type_arg != NULL) {
        if ((rc = cairn_type_lookup(db, type_arg, &type)) != CAIRN_OK) {
            rc = rc == CAIRN_EINVAL ? cli_usage_error(ctx->cmd, "unknown record type '%s'", type_arg)
                                    : cli_fail_db(ctx->cmd, db, rc, "--type");
            goto out;
        }
        range.type = type;
    }
    if (follow) {
        /* The stop signals are blocked but in the wait (ppoll), so one that
         * comes just before it is not lost; a closed pipe is a failed write
         * (or POLLERR while waiting), then exit 0. */
        cli_stop_signals(on_dump_signal, &wait_mask);
    }
    rc = cairn_follow_open(db, &range, &fo);
    if (rc != CAIRN_OK) {
        rc = cli_fail_db(ctx->cmd, db, rc, NULL);
        goto out;
    }
    if (csv)
        fputs("seq,ts,type,ns,payload,bin\r\n", stdout);
    while (!dump_stop) {
        rc = cairn_follow_next(fo, &rec, 0);
        if (rc == CAIRN_ENOTFOUND) {
            /* following: wait for the store, a stop signal or the reader
             * going away; the follower says when nothing can come any more */
            if (!follow || cairn_follow_ended(fo) || !wait_more(fo))
                break;
            continue;
        }
        if (rc != CAIRN_OK)
            break;
        if (ns != NULL && (rec.ns_len != strlen(ns) || memcmp(rec.ns, ns, rec.ns_len) != 0))
            continue;
        if (!matches(&rec, w, nw))
            continue;
        if (csv)
            dump_csv(&rec);
        else
            dump_record(&rec);
        if (follow && (fflush(stdout) != 0 || ferror(stdout))) {
            clearerr(stdout); /* the reader went away: done, not an error */
            rc = CAIRN_OK;
            break;
        }
    }
    if (rc == CAIRN_ENOTFOUND || rc == CAIRN_OK)
        rc = CLI_EXIT_OK;
    else
        rc = cli_fail_db(ctx->cmd, db, rc, NULL);
out:
    cairn_follow_close(fo);
    cairn_close(db);
done:
    for (size_t i = 0; i < nw; i++)
        cJSON_Delete(w[i].json);
    free(w);
    return rc;
}
