/*
 * cmd_mcp.c - `cairn mcp`: a Model Context Protocol server over stdio.
 *
 * JSON-RPC 2.0 messages, one per line, on stdin and stdout (the MCP stdio
 * transport); stderr is for the server's own warnings. The tools are the
 * library's tool interface (cairn_session_tools, cairn_session_call), so
 * the server only speaks the protocol: initialize, ping, tools/list,
 * tools/call.
 *
 * A call runs to its end once started: SIGINT, SIGTERM, SIGHUP and a
 * closed stdin end the loop between calls, and a client gone before its
 * answer is written (EPIPE) ends it after the call, so what a call
 * committed stays committed and the store is closed cleanly.
 *
 * Those signals are blocked in every thread (the engine's background
 * threads inherit the mask from cmd_mcp, which blocks them before the
 * store is opened) and let through only while the loop waits in pselect()
 * for the next message. So a signal is never lost: one that comes during
 * a call stays pending until that wait, which it then ends, and none is
 * taken by a thread other than the one waiting. (A flag checked before a
 * plain read() would miss a signal that lands between the check and the
 * read: the server would wait on stdin for good.)
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include "cairn.h"
#include "commands.h"

/* The protocol versions this server speaks, newest first. */
static const char *const protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                "2024-11-05"};

#define JSONRPC_PARSE_ERROR (-32700)
#define JSONRPC_INVALID_REQUEST (-32600)
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define JSONRPC_INVALID_PARAMS (-32602)
#define MCP_LINE_MAX (64u * 1024u * 1024u) /* longest message read */

const char cmd_mcp_help[] =
    "usage: cairn mcp [--read-only] [--store DIR]\n"
    "\n"
    "Serve the store to an MCP client (Claude Desktop, an IDE, an agent\n"
    "framework) over stdio: JSON-RPC messages, one a line, on stdin and stdout.\n"
    "Protocol versions 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05.\n"
    "\n"
    "Tools: memory_add, memory_recall, memory_context, memory_search,\n"
    "memory_get, memory_list, memory_update, memory_remove, memory_restore,\n"
    "memory_forget, memory_stats, memory_history, log_append, log_query,\n"
    "episode_new, episode_get, episode_list, causal_node, causal_edge,\n"
    "causal_path, causal_status, pattern_add, pattern_list, pattern_anti.\n"
    "tools/list gives each one's JSON Schema. A tool's result is its JSON\n"
    "object, as text and as structuredContent; a failure is a result with\n"
    "isError true and {\"error\": {\"code\": \"CAIRN_EXXX\", \"status\", \"message\"}}.\n"
    "\n"
    "Any number of servers (one per client window) may serve one store: reads\n"
    "never wait, and writes take turns with the store's writer lock, each\n"
    "waiting up to --busy-timeout. The store is created if it does not exist.\n"
    "Embedder: the built-in one when the store's vectors are its own, or with\n"
    "--embed-builtin; --no-embed for none (--embed-cmd is not supported here).\n"
    "\n"
    "Options:\n"
    "  --read-only   open the store read-only: write tools fail (CAIRN_EPERM)\n"
    "\n"
    "Example (an MCP client's configuration):\n"
    "  {\"mcpServers\": {\"cairn\": {\"command\": \"cairn\",\n"
    "                 \"args\": [\"--store\", \"/home/me/.cairn\", \"mcp\"]}}}\n"
    "\n"
    "Exit status: 0 when stdin closes or on SIGINT/SIGTERM; 1 the store could\n"
    "not be opened; 64 usage error.\n";

static volatile sig_atomic_t mcp_stop;
static sigset_t wait_mask; /* the mask while waiting for a message: the stop signals let through */

static void on_signal(int sig)
{
    (void)sig;
    mcp_stop = 1;
}

/* Block the stop signals in this thread and in every thread started after
 * it (call before the store is opened), with a handler that sets mcp_stop
 * for when pselect() lets them through; a write to a client that is gone
 * fails with EPIPE instead of killing. */
static void install_signals(void)
{
    cli_stop_signals(on_signal, &wait_mask);
}

/* A stop signal waits, blocked, to be let through: end between calls as
 * well as while waiting. */
static int stop_pending(void)
{
    sigset_t p;
    if (mcp_stop)
        return 1;
    if (sigpending(&p) != 0)
        return 0;
    return sigismember(&p, SIGINT) == 1 || sigismember(&p, SIGTERM) == 1 ||
           sigismember(&p, SIGHUP) == 1;
}

/* Wait until stdin can be read: 1, or 0 when a stop signal came (or
 * select failed: the caller then ends as at end of input). */
static int wait_input(void)
{
    for (;;) {
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(0, &rd);
        if (mcp_stop)
            return 0;
        if (pselect(1, &rd, NULL, NULL, NULL, &wait_mask) > 0)
            return 1;
        if (errno != EINTR)
            return 0;
    }
}

/* ---- writing messages ---------------------------------------------------------- */

static int client_gone;

static void send_json(cJSON *msg)
{
    char *s = cJSON_PrintUnformatted(msg);
    size_t n, off = 0;
    if (s == NULL || client_gone) {
        free(s);
        return;
    }
    n = strlen(s);
    s[n++] = '\n'; /* the NUL's place: one line */
    /* stdout is non-blocking: a client that stops reading cannot hold the
     * server past a stop signal, which pselect lets through */
    while (off < n) {
        ssize_t w = write(1, s + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            fd_set wr;
            FD_ZERO(&wr);
            FD_SET(1, &wr);
            if (mcp_stop || (pselect(2, NULL, &wr, NULL, NULL, &wait_mask) < 0 &&
                             errno != EINTR) || mcp_stop) {
                client_gone = 1; /* stopped while the client does not read */
                break;
            }
            continue;
        }
        if (w <= 0) {
            client_gone = 1; /* EPIPE: the client closed its end */
            break;
        }
        off += (size_t)w;
    }
    free(s);
}

static cJSON *response(const cJSON *id)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "jsonrpc", "2.0");
    cJSON_AddItemToObject(r, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
    return r;
}

static void send_result(const cJSON *id, cJSON *result)
{
    cJSON *r = response(id);
    cJSON_AddItemToObject(r, "result", result);
    send_json(r);
    cJSON_Delete(r);
}

static void send_error(const cJSON *id, int code, const char *message)
{
    cJSON *r = response(id), *e = cJSON_AddObjectToObject(r, "error");
    cJSON_AddNumberToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", message);
    send_json(r);
    cJSON_Delete(r);
}

/* ---- the methods ------------------------------------------------------------------ */

static cJSON *initialize_result(const cJSON *params)
{
    const char *asked = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params,
                                                                              "protocolVersion"));
    const char *v = protocol_versions[0];
    cJSON *r = cJSON_CreateObject(), *caps, *info;

    for (size_t i = 0; asked && i < sizeof protocol_versions / sizeof *protocol_versions; i++)
        if (strcmp(asked, protocol_versions[i]) == 0)
            v = protocol_versions[i];
    cJSON_AddStringToObject(r, "protocolVersion", v);
    caps = cJSON_AddObjectToObject(r, "capabilities");
    cJSON_AddFalseToObject(cJSON_AddObjectToObject(caps, "tools"), "listChanged");
    info = cJSON_AddObjectToObject(r, "serverInfo");
    cJSON_AddStringToObject(info, "name", "cairn");
    cJSON_AddStringToObject(info, "title", "cairn memory");
    cJSON_AddStringToObject(info, "version", cairn_version());
    cJSON_AddStringToObject(
        r, "instructions",
        "cairn is this agent's long-term memory. memory_add stores facts, decisions and "
        "lessons; memory_recall or memory_context brings back what matters for the task at "
        "hand. episode_new records a finished session; causal_* and pattern_* keep what "
        "caused what and what worked.");
    return r;
}

static int has_tool(const cJSON *tools, const char *name)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        if (n != NULL && strcmp(n, name) == 0)
            return 1;
    }
    return 0;
}

/* An unknown tool is a protocol error; a failure of a known one (bad
 * arguments included) is a result with isError, which the model sees and
 * may correct. */
/* The error object of the tool interface, for a refusal made here. */
static char *tool_error(int code, const char *message)
{
    char name[32], *text;
    const char *s = cairn_strerror(code);
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    snprintf(name, sizeof name, "%.*s", (int)strcspn(s, ":"), s);
    cJSON_AddStringToObject(e, "code", name);
    cJSON_AddNumberToObject(e, "status", code);
    cJSON_AddStringToObject(e, "message", message);
    text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

/* refuse: why the message's text breaks the rule although cJSON took it
 * (NULL: it does not). */
static void tools_call(cairn_session *s, const cJSON *tools, const cJSON *id,
                       const cJSON *params, const char *line, size_t len, const char *refuse)
{
    char why[CAIRN_ERRMSG_MAX];
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
    char *argtext = NULL, *out = NULL;
    cJSON *result, *content, *text, *structured;
    int rc;

    if (!cJSON_IsString(name)) {
        send_error(id, JSONRPC_INVALID_PARAMS, "tools/call: params.name must be a string");
        return;
    }
    if (!has_tool(tools, name->valuestring)) {
        char msg[160];
        snprintf(msg, sizeof msg, "Unknown tool: %.100s", name->valuestring);
        send_error(id, JSONRPC_INVALID_PARAMS, msg);
        return;
    }
    if (args != NULL && !cJSON_IsNull(args) && (argtext = cJSON_PrintUnformatted(args)) == NULL) {
        send_error(id, JSONRPC_INVALID_PARAMS, "tools/call: out of memory");
        return;
    }
    /* The rule for text, on the message as sent: cJSON would decode a
     * \u0000 to a NUL that silently ends the string it prints again. */
    if (refuse != NULL || cairn_text_check(line, len, 1, why, sizeof why) != CAIRN_OK) {
        rc = CAIRN_EINVAL;
        out = tool_error(rc, refuse ? refuse : why);
    } else {
        rc = cairn_session_call(s, name->valuestring, argtext, &out);
    }
    free(argtext);
    result = cJSON_CreateObject();
    content = cJSON_AddArrayToObject(result, "content");
    text = cJSON_CreateObject();
    cJSON_AddStringToObject(text, "type", "text");
    cJSON_AddStringToObject(text, "text", out ? out : "{}");
    cJSON_AddItemToArray(content, text);
    structured = out ? cJSON_Parse(out) : NULL;
    if (structured != NULL)
        cJSON_AddItemToObject(result, "structuredContent", structured);
    cJSON_AddBoolToObject(result, "isError", rc != CAIRN_OK);
    cairn_free(out);
    send_result(id, result);
}

static int hex4(const char *p, size_t avail, unsigned *u)
{
    *u = 0;
    if (avail < 4)
        return 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                          : 16u;
        if (d == 16u)
            return 0;
        *u = *u * 16 + d;
    }
    return 1;
}

/* JSON's grammar allows an escaped UTF-16 surrogate without its other half
 * ("\udc00" alone: what a JavaScript client sends for a string cut in the
 * middle of an emoji), but cJSON refuses the whole message, whose id is then
 * lost and whose client waits for an answer until it times out. A copy of
 * line with each such escape made \ufffd (same length), so that the message
 * can be read and refused with its id; NULL when there is none (or no
 * memory). *at: the byte offset of the first. */
static char *lone_surrogates_replaced(const char *line, size_t len, size_t *at)
{
    char *copy = NULL;
    for (size_t i = 0; i + 1 < len; i++) {
        unsigned u, v;
        if (line[i] != '\\')
            continue;
        if (line[i + 1] != 'u' || !hex4(line + i + 2, len - i - 2, &u)) {
            i++; /* another escape: skip its character (\\ too) */
            continue;
        }
        if (u >= 0xD800 && u <= 0xDBFF && i + 12 <= len && line[i + 6] == '\\' &&
            line[i + 7] == 'u' && hex4(line + i + 8, len - i - 8, &v) && v >= 0xDC00 &&
            v <= 0xDFFF) {
            i += 11; /* a pair */
            continue;
        }
        if (u >= 0xD800 && u <= 0xDFFF) {
            if (copy == NULL) {
                if ((copy = malloc(len)) == NULL)
                    return NULL;
                memcpy(copy, line, len);
                *at = i;
            }
            memcpy(copy + i + 2, "fffd", 4);
        }
        i += 5;
    }
    return copy;
}

/* One message (a request or a notification). */
static void handle(cairn_session *s, const cJSON *tools, const char *line, size_t len)
{
    cJSON *msg = cJSON_ParseWithLength(line, len);
    const cJSON *id, *method, *params;
    char refuse[160], *fixed;
    const char *m;
    size_t at = 0;

    refuse[0] = 0;
    if (msg == NULL && (fixed = lone_surrogates_replaced(line, len, &at)) != NULL) {
        msg = cJSON_ParseWithLength(fixed, len);
        free(fixed);
        if (msg != NULL)
            snprintf(refuse, sizeof refuse,
                     "the message holds half a UTF-16 surrogate pair (%.6s at byte %zu), "
                     "which is not text",
                     line + at, at);
    }
    if (msg == NULL) {
        send_error(NULL, JSONRPC_PARSE_ERROR, "Parse error: not JSON");
        return;
    }
    id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    if (!cJSON_IsObject(msg) || !cJSON_IsString(method)) {
        /* a response to nothing we asked, or not a JSON-RPC message */
        if (!cJSON_IsObject(msg) || (!cJSON_HasObjectItem(msg, "result") &&
                                     !cJSON_HasObjectItem(msg, "error")))
            send_error(id, JSONRPC_INVALID_REQUEST, "Invalid Request");
        cJSON_Delete(msg);
        return;
    }
    m = method->valuestring;
    if (id == NULL) { /* a notification: initialized, cancelled, ...; no answer */
        cJSON_Delete(msg);
        return;
    }
    if (strcmp(m, "initialize") == 0)
        send_result(id, initialize_result(params));
    else if (strcmp(m, "ping") == 0)
        send_result(id, cJSON_CreateObject());
    else if (strcmp(m, "tools/list") == 0) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddItemToObject(r, "tools", cJSON_Duplicate(tools, 1));
        send_result(id, r);
    } else if (strcmp(m, "tools/call") == 0)
        tools_call(s, tools, id, params, line, len, refuse[0] ? refuse : NULL);
    else {
        char buf[160];
        snprintf(buf, sizeof buf, "Method not found: %.100s", m);
        send_error(id, JSONRPC_METHOD_NOT_FOUND, buf);
    }
    cJSON_Delete(msg);
}

/* ---- the loop ------------------------------------------------------------------- */

static int serve(cairn_session *s, const cJSON *tools)
{
    size_t cap = 64 * 1024, len = 0, scan = 0;
    char *buf = malloc(cap);
    int skipping = 0; /* the rest of a message past the limit, up to its end */
    int fl = isatty(1) ? -1 : fcntl(1, F_GETFL); /* a terminal's flags are its shell's too */

    if (buf == NULL)
        return cli_fail("mcp", CAIRN_ENOMEM, "out of memory");
    if (fl >= 0)
        (void)fcntl(1, F_SETFL, fl | O_NONBLOCK);
    while (!client_gone && !stop_pending()) {
        char *nl = memchr(buf + scan, '\n', len - scan);
        ssize_t r;
        if (nl != NULL) {
            size_t n = (size_t)(nl - buf);
            if (!skipping && n > 0 && !(n == 1 && buf[0] == '\r'))
                handle(s, tools, buf, n);
            skipping = 0;
            memmove(buf, nl + 1, len - n - 1);
            len -= n + 1;
            scan = 0;
            continue;
        }
        scan = len;
        if (len == cap) {
            char *nb = cap < MCP_LINE_MAX ? realloc(buf, cap * 2) : NULL;
            if (nb == NULL) { /* a message past the limit: say so once, drop all of it */
                if (!skipping)
                    send_error(NULL, JSONRPC_INVALID_REQUEST, "message too long");
                skipping = 1;
                len = scan = 0;
                continue;
            }
            buf = nb;
            cap *= 2;
        }
        if (!wait_input())
            break;
        r = read(0, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) { /* the client closed stdin: a last message without its newline too */
            if (r == 0 && len > 0 && !skipping && !stop_pending())
                handle(s, tools, buf, len);
            break;
        }
        len += (size_t)r;
    }
    if (fl >= 0)
        (void)fcntl(1, F_SETFL, fl);
    free(buf);
    return CLI_EXIT_OK;
}

int cmd_mcp(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"read-only", 0}, {NULL, 0}};
    const char *name, *val;
    char opts[160], *err = NULL;
    cairn_session *s = NULL;
    cJSON *tools;
    cli_args a;
    int r, read_only = 0, rc;

    cli_args_init(&a, ctx, spec, argc, argv);
    while ((r = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (r == CLI_ARG_ERR)
            return CLI_EXIT_USAGE;
        if (r == CLI_ARG_HELP)
            return cli_help(cmd_mcp_help);
        if (r == CLI_ARG_POS)
            return cli_usage_error(ctx->cmd, "unexpected argument '%s'", val);
        read_only = 1;
    }
    if (ctx->embed_cmd != NULL)
        return cli_usage_error(ctx->cmd, "--embed-cmd is not supported by mcp (use "
                                         "--embed-builtin or --no-embed)");
    snprintf(opts, sizeof opts, "{\"read_only\":%s,\"busy_timeout_ms\":%u,\"embedder\":\"%s\"}",
             read_only ? "true" : "false",
             ctx->busy_timeout_ms ? ctx->busy_timeout_ms : CAIRN_BUSY_TIMEOUT_DEFAULT,
             ctx->no_embed ? "none" : ctx->embed_builtin ? "builtin" : "auto");
    install_signals(); /* before the store's threads start: they inherit the mask */
    rc = cairn_session_open(&s, ctx->store, opts, &err);
    if (rc != CAIRN_OK) {
        cJSON *e = err ? cJSON_Parse(err) : NULL;
        const char *m = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "error"),
                                             "message"));
        r = cli_fail(ctx->cmd, rc, "%s: %s", ctx->store, m ? m : cairn_strerror(rc));
        cJSON_Delete(e);
        cairn_free(err);
        return r;
    }
    if ((tools = cJSON_Parse(cairn_session_tools())) == NULL) {
        cairn_session_close(s);
        return cli_fail(ctx->cmd, CAIRN_ENOMEM, "out of memory");
    }
    rc = serve(s, tools);
    cJSON_Delete(tools);
    r = cairn_session_close(s);
    if (r != CAIRN_OK && rc == CLI_EXIT_OK)
        rc = cli_fail(ctx->cmd, r, "closing the store");
    return rc;
}
